package stamp

import (
	"crypto/hmac"
	"crypto/sha256"
)

// refHMAC is RFC 8762 §4.4's HMAC, written apart from the package's.
func refHMAC(key, msg []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return m.Sum(nil)[:16]
}
