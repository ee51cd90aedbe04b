package wire

import (
	"bytes"
	"strings"
	"testing"
)

// TestProof: a proof holds only for its secret, role, both nonces and
// request; changing any one of them makes it fail.
func TestProof(t *testing.T) {
	secret := []byte("0123456789abcdefghij")
	ch, nonce, req := NewNonce(), NewNonce(), []byte(`{"kind":"tcp","streams":1}`)
	mac := ProofMAC(secret, RoleClient, ch, nonce, req)
	if !CheckProof(secret, RoleClient, ch, nonce, req, mac) {
		t.Fatal("a good proof is refused")
	}
	cases := map[string]func() bool{
		"other secret":    func() bool { return CheckProof([]byte("0123456789abcdefghiX"), RoleClient, ch, nonce, req, mac) },
		"other role":      func() bool { return CheckProof(secret, RoleResponder, ch, nonce, req, mac) },
		"other challenge": func() bool { return CheckProof(secret, RoleClient, NewNonce(), nonce, req, mac) },
		"other nonce":     func() bool { return CheckProof(secret, RoleClient, ch, NewNonce(), req, mac) },
		"other request": func() bool {
			return CheckProof(secret, RoleClient, ch, nonce, []byte(`{"kind":"tcp","streams":2}`), mac)
		},
		"short nonce": func() bool {
			return CheckProof(secret, RoleClient, ch, nonce[:16], req, ProofMAC(secret, RoleClient, ch, nonce[:16], req))
		},
		"no mac": func() bool { return CheckProof(secret, RoleClient, ch, nonce, req, nil) },
	}
	for name, check := range cases {
		if check() {
			t.Errorf("%s: proof accepted", name)
		}
	}
	if bytes.Equal(mac, ProofMAC(secret, RoleResponder, ch, nonce, req)) {
		t.Error("client and responder proofs are equal: one could be reflected as the other")
	}
}

func TestCheckSecret(t *testing.T) {
	for _, tc := range []struct {
		secret string
		ok     bool
	}{
		{"s3cret", false},
		{"aaaaaaaaaaaaaaaaaaaaaaaa", false},
		{"abababababababababababab", false},
		{"q8Vd0uFZk1mJ3xR7tWcPzA==", true},
		{"correct horse battery staple", true},
	} {
		err := CheckSecret([]byte(tc.secret))
		if (err == nil) != tc.ok {
			t.Errorf("%q: err = %v, want ok %v", tc.secret, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "head -c 32 /dev/urandom | base64") {
			t.Errorf("%q: error %q does not say how to make a secret", tc.secret, err)
		}
	}
}

func TestPin(t *testing.T) {
	der := []byte("not really a certificate")
	fp := Fingerprint(der)
	for _, spelled := range []string{fp, strings.ToUpper(fp[:7]) + strings.ToUpper(fp[7:]), "sha256:" + colons(fp[7:])} {
		b, err := ParsePin(spelled)
		if err != nil || Fingerprint(der) != "sha256:"+hexOf(b) {
			t.Errorf("ParsePin(%q) = %x, %v; want the digest of %s", spelled, b, err, fp)
		}
	}
	for _, bad := range []string{"", "md5:00", "sha256:zz", "sha256:" + strings.Repeat("0", 62), fp[7:]} {
		if _, err := ParsePin(bad); err == nil || !strings.Contains(err.Error(), "sha256:") {
			t.Errorf("ParsePin(%q): err = %v, want a refusal naming the form", bad, err)
		}
	}
}

func colons(h string) string {
	var parts []string
	for i := 0; i < len(h); i += 2 {
		parts = append(parts, h[i:i+2])
	}
	return strings.Join(parts, ":")
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}
