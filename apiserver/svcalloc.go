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
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

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
}

func newServiceAllocator(st store.Store, cidr netip.Prefix, ports PortRange) (*serviceAllocator, error) {
	cidr = cidr.Masked()
	hostBits := cidr.Addr().BitLen() - cidr.Bits()
	if cidr.Addr().Is4() && hostBits < 2 || cidr.Addr().Is6() && cidr.Bits() < 64 {
		return nil, fmt.Errorf("service CIDR %s: want an IPv4 range with at least 2 addresses or an IPv6 one of /64 or longer", cidr)
	}
	al := &serviceAllocator{st: st, cidr: cidr, family: corev1.IPv4Protocol, ports: ports}
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

// defaultIPFamilyPolicy is the ipFamilyPolicy of a Service that names
// none: the one it had, both families for a headless Service without a
// selector, else single-stack.
func defaultIPFamilyPolicy(svc, old *corev1.Service) corev1.IPFamilyPolicy {
	var p corev1.IPFamilyPolicy
	switch {
	case old != nil && old.Spec.IPFamilyPolicy != nil:
		p = *old.Spec.IPFamilyPolicy
	case svc.Spec.ClusterIP == corev1.ClusterIPNone && len(svc.Spec.Selector) == 0:
		// Headless without selector defaults to both families, even
		// where only one is configured: its endpoints are the user's.
		p = corev1.IPFamilyPolicyRequireDualStack
	default:
		p = corev1.IPFamilyPolicySingleStack
	}
	return p
}

// familiesOfClusterIPs refuses more than one cluster IP or family under
// a single-stack policy, and a cluster IP of a family this cluster does
// not serve; it names the family of each cluster IP that has none.
func (al *serviceAllocator) familiesOfClusterIPs(svc *corev1.Service) field.ErrorList {
	spec := &svc.Spec
	var errs field.ErrorList
	policyPath := field.NewPath("spec", "ipFamilyPolicy")
	if *spec.IPFamilyPolicy == corev1.IPFamilyPolicySingleStack {
		if len(spec.ClusterIPs) == 2 {
			errs = append(errs, field.Invalid(policyPath, spec.IPFamilyPolicy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified"))
		}
		if len(spec.IPFamilies) == 2 {
			errs = append(errs, field.Invalid(policyPath, spec.IPFamilyPolicy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"))
		}
	}
	for i, ip := range spec.ClusterIPs {
		if ip == corev1.ClusterIPNone {
			break
		}
		fam := familyOf(ip)
		if i >= len(spec.IPFamilies) {
			if fam != al.family {
				errs = append(errs, field.Invalid(field.NewPath("spec", "clusterIPs").Index(i), spec.ClusterIPs, fmt.Sprintf("%s is not configured on this cluster", fam)))
			} else {
				spec.IPFamilies = append(spec.IPFamilies, fam)
			}
		}
	}
	return errs
}

// initIPFamilies fills ipFamilyPolicy and ipFamilies as a single-stack
// cluster of al's family does, and refuses what it cannot serve.
func (al *serviceAllocator) initIPFamilies(svc, old *corev1.Service) error {
	spec := &svc.Spec
	if spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	if spec.IPFamilyPolicy == nil {
		p := defaultIPFamilyPolicy(svc, old)
		spec.IPFamilyPolicy = &p
	}
	if errs := validateClusterIPFields(svc, old); len(errs) > 0 {
		return apierrors.NewInvalid(serviceKind, svc.Name, errs)
	}
	policy := *spec.IPFamilyPolicy
	policyPath := field.NewPath("spec", "ipFamilyPolicy")
	if errs := al.familiesOfClusterIPs(svc); len(errs) > 0 {
		return apierrors.NewInvalid(serviceKind, svc.Name, errs)
	}
	var errs field.ErrorList
	if spec.ClusterIP == corev1.ClusterIPNone && len(spec.Selector) == 0 {
		if len(spec.IPFamilies) == 0 {
			spec.IPFamilies = []corev1.IPFamily{al.family}
		}
		if len(spec.IPFamilies) < 2 && policy != corev1.IPFamilyPolicySingleStack {
			other := corev1.IPv6Protocol
			if spec.IPFamilies[0] == corev1.IPv6Protocol {
				other = corev1.IPv4Protocol
			}
			spec.IPFamilies = append(spec.IPFamilies, other)
		}
		return nil
	}
	if policy == corev1.IPFamilyPolicyRequireDualStack {
		errs = append(errs, field.Invalid(policyPath, spec.IPFamilyPolicy, "this cluster is not configured for dual-stack services"))
	}
	for i, fam := range spec.IPFamilies {
		if fam != al.family {
			errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilies").Index(i), fam, "not configured on this cluster"))
		}
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(serviceKind, svc.Name, errs)
	}
	if len(spec.IPFamilies) == 0 {
		spec.IPFamilies = []corev1.IPFamily{al.family}
	}
	return nil
}

// validateClusterIPFields is the check kube runs before allocating: the
// two fields agree and hold addresses, the IP families and the family
// policy have supported values.
func validateClusterIPFields(svc, old *corev1.Service) field.ErrorList {
	spec := &svc.Spec
	path := field.NewPath("spec", "clusterIPs")
	var errs field.ErrorList
	switch {
	case spec.ClusterIP != "" && len(spec.ClusterIPs) == 0:
		errs = append(errs, field.Required(path, ""))
	case spec.ClusterIP != "" && spec.ClusterIPs[0] != spec.ClusterIP:
		errs = append(errs, field.Invalid(path, spec.ClusterIPs, "first value must match `clusterIP`"))
	case spec.ClusterIP == "" && len(spec.ClusterIPs) != 0:
		errs = append(errs, field.Invalid(path, spec.ClusterIPs, "must be empty when `clusterIP` is not specified"))
	}
	seen := map[corev1.IPFamily]bool{}
	for i, fam := range spec.IPFamilies {
		p := field.NewPath("spec", "ipFamilies").Index(i)
		if fam != corev1.IPv4Protocol && fam != corev1.IPv6Protocol {
			errs = append(errs, field.NotSupported(p, fam, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}))
		}
		if seen[fam] {
			errs = append(errs, field.Duplicate(p, fam))
		}
		seen[fam] = true
	}
	if pol := spec.IPFamilyPolicy; pol != nil && *pol != corev1.IPFamilyPolicySingleStack &&
		*pol != corev1.IPFamilyPolicyPreferDualStack && *pol != corev1.IPFamilyPolicyRequireDualStack {
		errs = append(errs, field.NotSupported(field.NewPath("spec", "ipFamilyPolicy"), *pol, []corev1.IPFamilyPolicy{
			corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack, corev1.IPFamilyPolicySingleStack}))
	}
	var oldIPs []string
	if old != nil {
		oldIPs = old.Spec.ClusterIPs
	}
	for i, ip := range spec.ClusterIPs {
		if i == 0 && ip == corev1.ClusterIPNone {
			if len(spec.ClusterIPs) > 1 {
				errs = append(errs, field.Invalid(path, spec.ClusterIPs, "'None' must be the first and only value"))
			}
			continue
		}
		errs = append(errs, validation.IsValidIPForLegacyField(path.Index(i), ip, true, oldIPs)...)
	}
	if len(spec.ClusterIPs) > 2 {
		errs = append(errs, field.Invalid(path, spec.ClusterIPs, "may only hold up to 2 values"))
	}
	return errs
}

func familyOf(ip string) corev1.IPFamily {
	if a, err := netip.ParseAddr(ip); err == nil && a.Unmap().Is4() {
		return corev1.IPv4Protocol
	}
	return corev1.IPv6Protocol
}

// allocation is the IPs and ports reserved for one write, to keep if the
// write succeeds and to give back if it fails, and those to release once
// it succeeds.
type allocation struct {
	al      *serviceAllocator
	ctx     context.Context
	dry     bool
	added   []string // keys created
	release []string // keys to delete on success
	dryPort int32    // the last port a dry run made up
	dryUsed map[int32]bool
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
	a.added, a.release = nil, nil
}

type owner struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// reserve creates key for svc; exists reports that another holds it.
func (a *allocation) reserve(key string, svc *corev1.Service) (exists bool, err error) {
	value, _ := json.Marshal(owner{Namespace: svc.Namespace, Name: svc.Name})
	if _, err := a.al.st.Create(a.ctx, key, value); err != nil {
		return errors.Is(err, store.ErrExists), err
	}
	a.added = append(a.added, key)
	return false, nil
}

// ip reserves a requested address.
func (a *allocation) ip(svc *corev1.Service, ip netip.Addr) error {
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
	if exists, err := a.reserve(serviceIPPrefix+ip.String(), svc); exists {
		return errIPAllocated
	} else if err != nil {
		return err
	}
	return nil
}

// nextIP reserves a free address: from a random start in the upper band,
// then in the lower one.
func (a *allocation) nextIP(svc *corev1.Service) (netip.Addr, error) {
	if a.dry {
		// Like kube, a dry run does not look for one and shows the
		// network address.
		return a.al.cidr.Addr(), nil
	}
	taken, err := a.taken(serviceIPPrefix)
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
			key := serviceIPPrefix + ip.String()
			if taken[key] {
				continue
			}
			exists, err := a.reserve(key, svc)
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

// hasPort reports whether this allocation already reserved p.
func (a *allocation) hasPort(p int32) bool {
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

// port reserves a requested node port.
func (a *allocation) port(svc *corev1.Service, p int32) error {
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

// nextPort reserves a free node port, from a random start in the upper
// band, then in the lower one.
func (a *allocation) nextPort(svc *corev1.Service) (int32, error) {
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

func (a *allocation) releaseIP(ip string) {
	if addr, err := netip.ParseAddr(ip); err == nil {
		a.release = append(a.release, serviceIPPrefix+addr.Unmap().String())
	}
}

func (a *allocation) releasePort(p int32) { a.release = append(a.release, portKey(p)) }
