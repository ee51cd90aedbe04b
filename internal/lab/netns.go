package lab

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/tun"
)

// TUNName is the TUN device's name inside each namespace.
const TUNName = "fp0"

// MTU of the TUN devices: what the hosts believe; a smaller path MTU is
// a link stage (--mtu), so PMTUD has something to find.
const tunMTU = 1500

// tunQueue is the TUN device's transmit queue, in packets: what the
// kernel holds for the forwarder's reader (the default, 500, is 3.4 ms
// of 64-byte frames at 100 Mbit/s; 4,096 is 27 ms, enough for a reader
// that waits for a busy core). A packet waits there before the reader
// stamps its arrival; an overflow is counted (DirectionStats.ReadDrops).
const tunQueue = 4096

// inNS runs f on an OS thread switched into ns, and switches back. If the
// thread cannot be switched back it stays locked, so the runtime retires
// it instead of reusing a thread in the wrong namespace.
func inNS(ns netns.NsHandle, f func() error) error {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer orig.Close()
	if err := netns.Set(ns); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("enter namespace: %w", err)
	}
	ferr := f()
	if err := netns.Set(orig); err != nil {
		return fmt.Errorf("leave namespace: %w", err) // thread stays locked: retired
	}
	runtime.UnlockOSThread()
	return ferr
}

// createNS makes a named namespace (/run/netns/NAME, as `ip netns` does),
// replacing a stale one of that name.
func createNS(name string) (netns.NsHandle, error) {
	_ = netns.DeleteNamed(name)
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return 0, err
	}
	defer orig.Close()
	h, err := netns.NewNamed(name) // switches this thread into it
	if rerr := netns.Set(orig); rerr != nil {
		return 0, fmt.Errorf("leave namespace %s: %w", name, rerr)
	}
	runtime.UnlockOSThread()
	if err != nil {
		return 0, fmt.Errorf("create namespace %s: %w (are you root?)", name, err)
	}
	return h, nil
}

// deleteNS removes a named namespace; a missing one is not an error.
func deleteNS(name string) error {
	err := netns.DeleteNamed(name)
	if err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINVAL) {
		return err
	}
	return nil
}

// nsExists reports whether /run/netns/NAME exists.
func nsExists(name string) bool {
	_, err := os.Stat("/run/netns/" + name)
	return err == nil
}

// openTUN creates the TUN device inside ns with virtio-net headers, so
// the kernel hands over TSO/GSO super-packets that the tun package splits
// into wire-sized packets (and coalesces again on write).
func openTUN(ns netns.NsHandle) (tun.Device, error) {
	var fd int
	err := inNS(ns, func() error {
		var err error
		fd, err = unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open /dev/net/tun: %w", err)
		}
		ifr, err := unix.NewIfreq(TUNName)
		if err != nil {
			return err
		}
		ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI | unix.IFF_VNET_HDR)
		if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
			unix.Close(fd)
			return fmt.Errorf("create TUN: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	dev, _, err := tun.CreateUnmonitoredTUNFromFD(fd)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return dev, nil
}

// p2p is a point-to-point address: local/32 peer remote/32.
func p2p(local, remote netip.Addr) *netlink.Addr {
	return &netlink.Addr{
		IPNet: &net.IPNet{IP: local.AsSlice(), Mask: net.CIDRMask(32, 32)},
		Peer:  &net.IPNet{IP: remote.AsSlice(), Mask: net.CIDRMask(32, 32)},
	}
}

// configure sets loopback and the TUN up in ns, with addr on the TUN
// (the kernel routes addr's prefix, or its peer, through it).
func configure(ns netns.NsHandle, addr *netlink.Addr) error {
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return err
	}
	if err := h.LinkSetUp(lo); err != nil {
		return err
	}
	l, err := h.LinkByName(TUNName)
	if err != nil {
		return err
	}
	if err := h.LinkSetMTU(l, tunMTU); err != nil {
		return err
	}
	if err := h.LinkSetTxQLen(l, tunQueue); err != nil {
		return err
	}
	if err := h.AddrAdd(l, addr); err != nil {
		return fmt.Errorf("address %v: %w", addr.IPNet, err)
	}
	if err := h.LinkSetUp(l); err != nil {
		return err
	}
	return nil
}

// Exec replaces this process with argv run inside the named namespace,
// its environment plus env (KEY=value). It returns only on error.
func Exec(nsName string, argv []string, env ...string) error {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	h, err := netns.GetFromName(nsName)
	if err != nil {
		return fmt.Errorf("namespace %s: %w (is the lab up?)", nsName, err)
	}
	runtime.LockOSThread() // exec from this thread, in this namespace
	if err := netns.Set(h); err != nil {
		return err
	}
	return syscall.Exec(path, argv, append(os.Environ(), env...))
}
