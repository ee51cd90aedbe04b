package controller

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
)

// Agents cannot invent targets. An agent advertises the addresses its
// peers dial; a peer's tests (stamp, ping, unreach, and every
// throughput test) then go there. An address is dialled only when it
// is the address the agent connects from, or an admin approved it
// (`fleet agents approve`: behind NAT, or a second interface); the
// others wait in the agent's pending addresses. Addresses no agent's
// responder can be at are refused outright.

// awsMetadataV6 is the IPv6 address of a cloud's instance metadata
// service (the IPv4 one, 169.254.169.254, is link-local).
var awsMetadataV6 = netip.MustParseAddr("fd00:ec2::254")

// specialAddress says why ip cannot be an agent's responder seen from
// its peers, or "": unspecified, multicast, link-local (and so a cloud's
// metadata service), broadcast, or loopback when the agent does not
// connect from loopback itself (another host's loopback is each peer's
// own).
func specialAddress(ip, from netip.Addr) string {
	ip, from = ip.Unmap(), from.Unmap()
	switch {
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsMulticast():
		return "multicast"
	case ip.IsLinkLocalUnicast():
		return "link-local (a cloud's metadata service is there)"
	case ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "broadcast"
	case ip == awsMetadataV6:
		return "a cloud's metadata service"
	case ip.IsLoopback() && !from.IsLoopback():
		return "loopback, and the agent connects from " + from.String() + ": its peers would dial themselves"
	}
	return ""
}

// checkAddresses refuses an address no responder can be at (400, naming
// it); from is the address the agent connects from.
func checkAddresses(addrs []string, from netip.Addr) error {
	for _, a := range addrs {
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			return badRequest("address %q: want host:port (%v)", a, err)
		}
		if strings.EqualFold(host, "localhost") {
			host = "127.0.0.1"
		}
		ip, err := netip.ParseAddr(host)
		if err != nil {
			continue // a host name: it waits for approval (splitAddresses)
		}
		if why := specialAddress(ip.WithZone(""), from); why != "" {
			return badRequest("address %q: %s; advertise an address its peers can reach (--advertise)", a, why)
		}
	}
	return nil
}

// splitAddresses splits an agent's advertised addresses into those its
// peers dial (the address it connects from, or approved) and those that
// wait for an admin's approval.
func splitAddresses(addrs []string, from netip.Addr, approved []string) (dial, pending []string) {
	for _, a := range addrs {
		host, _, _ := net.SplitHostPort(a)
		ip, err := netip.ParseAddr(host)
		if err == nil && ip.WithZone("").Unmap() == from.Unmap() || slices.Contains(approved, a) {
			dial = append(dial, a)
		} else {
			pending = append(pending, a)
		}
	}
	return dial, pending
}

// remoteAddr is the address a request came from.
func remoteAddr(r *http.Request) (netip.Addr, error) {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("the request's address %q: %w", r.RemoteAddr, err)
	}
	return ap.Addr().WithZone("").Unmap(), nil
}
