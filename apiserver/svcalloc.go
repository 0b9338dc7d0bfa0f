package apiserver

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/store"
)

// The service IP and node port allocator (D.6). Every cluster IP and node
// port in use is a key of its own in the store, created with Store.Create:
// the store refuses a second create of a key, so two Services never get the
// same one, however many creates run at once and on whichever server
// sharing the store; and the allocations live with the objects, in bbolt
// or etcd, across restarts.
const (
	serviceIPPrefix       = "/registry/kubegate/serviceips/"
	serviceNodePortPrefix = "/registry/kubegate/servicenodeports/"
)

// DefaultServiceClusterIPRange is the service CIDR when Config sets none,
// kubegate pki init's default (kube-apiserver's own is 10.0.0.0/24).
var DefaultServiceClusterIPRange = netip.MustParsePrefix("10.96.0.0/12")

// DefaultServiceNodePortRange is kube-apiserver's --service-node-port-range.
var DefaultServiceNodePortRange = PortRange{First: 30000, Last: 32767}

// PortRange is an inclusive range of ports.
type PortRange struct{ First, Last int }

func (r PortRange) String() string { return fmt.Sprintf("%d-%d", r.First, r.Last) }

// ParsePortRange parses "FIRST-LAST" (or a single port).
func ParsePortRange(s string) (PortRange, error) {
	first, last, ok := strings.Cut(s, "-")
	if !ok {
		last = first
	}
	a, err1 := strconv.Atoi(strings.TrimSpace(first))
	b, err2 := strconv.Atoi(strings.TrimSpace(last))
	if err1 != nil || err2 != nil || a < 1 || b > 65535 || a > b {
		return PortRange{}, fmt.Errorf("port range %q is not FIRST-LAST within 1-65535", s)
	}
	return PortRange{First: a, Last: b}, nil
}

var (
	errRangeFull     = errors.New("range is full")
	errIPAllocated   = errors.New("provided IP is already allocated")
	errPortAllocated = errors.New("provided port is already allocated")
	// errMismatchedNetwork is kube's word for an address outside the range.
	errMismatchedNetwork = errors.New("the provided network does not match the current range")
)

// serviceAllocator hands out the addresses of one service CIDR and the
// ports of one node port range.
type serviceAllocator struct {
	st     store.Store
	cidr   netip.Prefix
	family corev1.IPFamily
	// The usable addresses are first..last (not the network address, nor
	// IPv4's broadcast). Picking a free one starts at a random place in
	// upper..last and falls back to first..upper-1, which leaves the
	// lower addresses to Services that ask for a fixed one (KEP-3070),
	// the first of them to the kubernetes Service.
	first, upper, last netip.Addr
	ports              PortRange
	portUpper          int // the same split of the node ports (KEP-3668)
	// ipPrefix is where the addresses in use are kept, each under its
	// own key; createIP, when set, reserves one by creating its object
	// there (an IPAddress, D.19), and an error for an object that exists
	// is an AlreadyExists StatusError. nil: the key holds the owner.
	ipPrefix string
	createIP func(ctx context.Context, ip netip.Addr, svc metav1.Object) error
	// ipOwner reads the Service that holds an address from its stored
	// value (an IPAddress's parentRef); nil: the value is the owner's JSON.
	ipOwner func(value []byte) (owner, error)
}

func newServiceAllocator(st store.Store, cidr netip.Prefix, ports PortRange) (*serviceAllocator, error) {
	cidr = cidr.Masked()
	hostBits := cidr.Addr().BitLen() - cidr.Bits()
	if cidr.Addr().Is4() && hostBits < 2 || cidr.Addr().Is6() && cidr.Bits() < 64 {
		return nil, fmt.Errorf("service CIDR %s: want an IPv4 range with at least 2 addresses or an IPv6 one of /64 or longer", cidr)
	}
	al := &serviceAllocator{st: st, cidr: cidr, family: corev1.IPv4Protocol, ports: ports, ipPrefix: serviceIPPrefix}
	if cidr.Addr().Is6() {
		al.family = corev1.IPv6Protocol
	}
	al.first = cidr.Addr().Next()
	al.last = lastAddr(cidr)
	if al.family == corev1.IPv4Protocol {
		al.last = al.last.Prev()
	}
	// The lower band is size/16 addresses, at least 16 and at most 256,
	// and none for ranges of 16 addresses or fewer.
	size := uint64(1) << min(hostBits, 63)
	band := uint64(0)
	if size > 16 {
		band = min(max(size/16, 16), 256)
	}
	al.upper = addAddr(al.first, band)
	n := ports.Last - ports.First + 1
	if n > 16 {
		al.portUpper = ports.First + min(max(n/32, 16), 128)
	} else {
		al.portUpper = ports.First
	}
	return al, nil
}

// lastAddr is the highest address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// addAddr is a+n, without overflow past the family's last address.
func addAddr(a netip.Addr, n uint64) netip.Addr {
	b := a.As16()
	for i := 15; i >= 0 && n > 0; i-- {
		sum := uint64(b[i]) + n&0xff
		b[i] = byte(sum)
		n = n>>8 + sum>>8
	}
	r := netip.AddrFrom16(b)
	if a.Is4() {
		r = r.Unmap()
	}
	return r
}

// count is the number of addresses from a to b inclusive. Service CIDRs
// are IPv4 or IPv6 of /64 or longer, so they differ in the low 64 bits.
func count(a, b netip.Addr) uint64 {
	x, y := a.As16(), b.As16()
	return binary.BigEndian.Uint64(y[8:]) - binary.BigEndian.Uint64(x[8:]) + 1
}

// ServiceAllocation is the server's allocator of Services' cluster IPs
// and node ports (D.6) as one write sees it: what it reserves is kept once
// the write succeeds and given back if the write fails, what it releases
// goes only once the write succeeds, and a dry run reserves and releases
// nothing. A Resource's Allocate and Release hooks are given one; the
// Service-specific rules (which addresses and ports a Service needs) are
// its kind's.
type ServiceAllocation interface {
	// Family is the IP family of the service range.
	Family() corev1.IPFamily
	// IP reserves the requested address for owner: an error when it is
	// outside the range or already taken.
	IP(owner metav1.Object, ip netip.Addr) error
	// NextIP reserves a free address for owner; a dry run takes none and
	// returns the range's network address, as kube's does.
	NextIP(owner metav1.Object) (netip.Addr, error)
	// Port reserves the requested node port for owner: an error when it
	// is outside the range or already taken.
	Port(owner metav1.Object, port int32) error
	// NextPort reserves a free node port for owner; a dry run makes one up
	// above the range, as kube's does.
	NextPort(owner metav1.Object) (int32, error)
	// HasPort reports whether this write has already reserved port.
	HasPort(port int32) bool
	// ReleaseIP gives back an address owner holds once the write
	// succeeds; one another holds is left alone.
	ReleaseIP(owner metav1.Object, ip string)
	// ReleasePort gives back a node port once the write succeeds.
	ReleasePort(port int32)
}

var _ ServiceAllocation = (*allocation)(nil)

// allocation is the IPs and ports reserved for one write, to keep if the
// write succeeds and to give back if it fails, and those to release once
// it succeeds.
type allocation struct {
	al      *serviceAllocator
	ctx     context.Context
	dry     bool
	added   []string // keys created
	release []string // keys to delete on success
	// releaseIPs are the address keys to delete on success, each if the
	// Service releasing it still holds it.
	releaseIPs []releasedIP
	dryPort    int32 // the last port a dry run made up
	dryUsed    map[int32]bool
}

func (al *serviceAllocator) begin(ctx context.Context, dry bool) *allocation {
	// A cancelled request must still give back what it took.
	return &allocation{al: al, ctx: context.WithoutCancel(ctx), dry: dry, dryUsed: map[int32]bool{}}
}

// finish keeps the reservations and releases what the write gave up (ok),
// or gives the reservations back. A nil allocation does nothing.
func (a *allocation) finish(ok bool) {
	if a == nil || a.dry {
		return
	}
	keys := a.added
	if ok {
		keys = a.release
	}
	for _, k := range keys {
		// A key left behind only wastes an address until the Service
		// that would own it is deleted and recreated; nothing to tell the
		// client.
		_, _, _ = a.al.st.Delete(a.ctx, k, 0)
	}
	if ok {
		for _, r := range a.releaseIPs {
			a.al.releaseIP(a.ctx, r)
		}
	}
	a.added, a.release, a.releaseIPs = nil, nil, nil
}

// end finishes the allocation of a write that ended with err. A write the
// store could not tell applied or not (store.ErrMaybeApplied, J.4) keeps
// every reservation and releases nothing: the Service may hold them, and
// an address kept unused is safer than one given to two Services.
func (a *allocation) end(err error) {
	if errors.Is(err, store.ErrMaybeApplied) {
		if a != nil {
			a.added, a.release, a.releaseIPs = nil, nil, nil
		}
		return
	}
	a.finish(err == nil)
}

type releasedIP struct {
	key   string
	owner owner
}

// releaseIP deletes the address's key if r's Service holds it, so that a
// Service never frees an address another holds.
func (al *serviceAllocator) releaseIP(ctx context.Context, r releasedIP) {
	kv, err := al.st.Get(ctx, r.key)
	if err != nil {
		return
	}
	var held owner
	if al.ipOwner != nil {
		held, err = al.ipOwner(kv.Value)
	} else {
		err = json.Unmarshal(kv.Value, &held)
	}
	if err != nil || held != r.owner {
		return
	}
	_, _, _ = al.st.Delete(ctx, r.key, kv.ModRevision)
}

type owner struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// reserve creates key for svc, its owner; exists reports that another holds it.
func (a *allocation) reserve(key string, svc metav1.Object) (exists bool, err error) {
	value, _ := json.Marshal(owner{Namespace: svc.GetNamespace(), Name: svc.GetName()})
	if _, err := a.al.st.Create(a.ctx, key, value); err != nil {
		return errors.Is(err, store.ErrExists), err
	}
	a.added = append(a.added, key)
	return false, nil
}

// reserveIP reserves ip for svc, by its key or its object; exists
// reports that another holds it.
func (a *allocation) reserveIP(ip netip.Addr, svc metav1.Object) (exists bool, err error) {
	key := a.al.ipPrefix + ip.String()
	if a.al.createIP == nil {
		return a.reserve(key, svc)
	}
	if err := a.al.createIP(a.ctx, ip, svc); err != nil {
		return apierrors.IsAlreadyExists(err), err
	}
	a.added = append(a.added, key)
	return false, nil
}

// Family is the IP family of the service range.
func (a *allocation) Family() corev1.IPFamily { return a.al.family }

// IP reserves a requested address.
func (a *allocation) IP(svc metav1.Object, ip netip.Addr) error {
	ip = ip.Unmap()
	if ip.Less(a.al.first) || a.al.last.Less(ip) || ip.Is4() != a.al.first.Is4() {
		if !a.dry {
			// kube's allocator finds no service CIDR for the address.
			return errMismatchedNetwork
		}
		return fmt.Errorf("the provided IP (%v) is not in the valid range. The range of valid IPs is %s", ip, a.al.cidr)
	}
	if a.dry {
		return nil
	}
	if exists, err := a.reserveIP(ip, svc); exists {
		return errIPAllocated
	} else if err != nil {
		return err
	}
	return nil
}

// NextIP reserves a free address: from a random start in the upper band,
// then in the lower one.
func (a *allocation) NextIP(svc metav1.Object) (netip.Addr, error) {
	if a.dry {
		// Like kube, a dry run does not look for one and shows the
		// network address.
		return a.al.cidr.Addr(), nil
	}
	taken, err := a.taken(a.al.ipPrefix)
	if err != nil {
		return netip.Addr{}, err
	}
	for _, band := range [][2]netip.Addr{{a.al.upper, a.al.last}, {a.al.first, a.al.upper.Prev()}} {
		if band[1].Less(band[0]) {
			continue
		}
		n := count(band[0], band[1])
		start := rand.Uint64N(n)
		for i := uint64(0); i < n; i++ {
			ip := addAddr(band[0], (start+i)%n)
			if taken[a.al.ipPrefix+ip.String()] {
				continue
			}
			exists, err := a.reserveIP(ip, svc)
			if exists {
				continue // taken since the list
			}
			if err != nil {
				return netip.Addr{}, err
			}
			return ip, nil
		}
	}
	return netip.Addr{}, errRangeFull
}

// taken lists the keys under prefix.
func (a *allocation) taken(prefix string) (map[string]bool, error) {
	taken := map[string]bool{}
	opts := store.ListOptions{Limit: 10000}
	for {
		page, err := a.al.st.List(a.ctx, prefix, opts)
		if err != nil {
			return nil, err
		}
		for _, kv := range page.KVs {
			taken[kv.Key] = true
		}
		if !page.More {
			return taken, nil
		}
		opts.Revision, opts.Continue = page.Revision, page.KVs[len(page.KVs)-1].Key
	}
}

func portKey(p int32) string { return serviceNodePortPrefix + strconv.Itoa(int(p)) }

// HasPort reports whether this allocation already reserved p.
func (a *allocation) HasPort(p int32) bool {
	return a.dryUsed[p] || containsString(a.added, portKey(p))
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// Port reserves a requested node port.
func (a *allocation) Port(svc metav1.Object, p int32) error {
	if a.dry {
		// kube's dry run checks only whether the port is taken.
		if a.dryUsed[p] {
			return errPortAllocated
		}
		if _, err := a.al.st.Get(a.ctx, portKey(p)); err == nil {
			return errPortAllocated
		}
		a.dryUsed[p] = true
		return nil
	}
	if int(p) < a.al.ports.First || int(p) > a.al.ports.Last {
		return fmt.Errorf("provided port is not in the valid range. The range of valid ports is %s", a.al.ports)
	}
	if exists, err := a.reserve(portKey(p), svc); exists {
		return errPortAllocated
	} else if err != nil {
		return err
	}
	return nil
}

// NextPort reserves a free node port, from a random start in the upper
// band, then in the lower one.
func (a *allocation) NextPort(svc metav1.Object) (int32, error) {
	if a.dry {
		// kube's dry run makes up ports above the range: 32769, 32770, ...
		if a.dryPort == 0 {
			a.dryPort = 32768
		}
		a.dryPort++
		a.dryUsed[a.dryPort] = true
		return a.dryPort, nil
	}
	taken, err := a.taken(serviceNodePortPrefix)
	if err != nil {
		return 0, err
	}
	for _, band := range [][2]int{{a.al.portUpper, a.al.ports.Last}, {a.al.ports.First, a.al.portUpper - 1}} {
		n := band[1] - band[0] + 1
		if n <= 0 {
			continue
		}
		start := rand.IntN(n)
		for i := 0; i < n; i++ {
			p := int32(band[0] + (start+i)%n)
			if taken[portKey(p)] {
				continue
			}
			exists, err := a.reserve(portKey(p), svc)
			if exists {
				continue
			}
			if err != nil {
				return 0, err
			}
			return p, nil
		}
	}
	return 0, errRangeFull
}

// ReleaseIP gives back ip, if svc holds it, once the write succeeds.
func (a *allocation) ReleaseIP(svc metav1.Object, ip string) {
	if addr, err := netip.ParseAddr(ip); err == nil {
		a.releaseIPs = append(a.releaseIPs, releasedIP{key: a.al.ipPrefix + addr.Unmap().String(),
			owner: owner{Namespace: svc.GetNamespace(), Name: svc.GetName()}})
	}
}

// ReleasePort gives back p once the write succeeds.
func (a *allocation) ReleasePort(p int32) { a.release = append(a.release, portKey(p)) }
