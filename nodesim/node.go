package nodesim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// Labels every simulated node carries, besides kubernetes.io/hostname.
const (
	InstanceTypeLabel = corev1.LabelInstanceTypeStable // node.kubernetes.io/instance-type
	InstanceType      = "simulated"
)

// node is one simulated node: its fixed identity and, guarded by mu, the
// lease last written.
type node struct {
	name    string
	uid     types.UID // of the Node object, once registered
	hostIP  netip.Addr
	podNet  netip.Prefix // a /24
	spec    corev1.NodeSpec
	labels  map[string]string
	status  corev1.NodeStatus // the template; condition times are set per write
	gone    atomic.Bool       // the Node was deleted by someone else: stop
	leaseMu sync.Mutex
	lease   *coordinationv1.Lease
	// Pod addresses, guarded by podSync.mu: used host bytes of podNet and
	// where the search for a free one starts.
	used [256]bool
	next int
}

// nodeIP is the InternalIP of node i (0-based): 10.0.0.1, 10.0.0.2, …
func nodeIP(i int) netip.Addr {
	h := i + 1
	return netip.AddrFrom4([4]byte{10, 0, byte(h >> 8), byte(h)})
}

// podCIDR is node i's pod /24: 10.244.i.0/24 for the first 256 nodes, on
// through 10.255.255.0/24, then from 10.128.0.0/24 (MaxCount in all).
func podCIDR(i int) netip.Prefix {
	b := 244<<8 + i
	if b > 0xffff {
		b = b - 0x10000 + 128<<8
	}
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(b >> 8), byte(b), 0}), 24)
}

// DefaultImages are the images a simulated node reports as present: what
// every kubelet node holds (pause, kube-proxy) and a DNS server.
func DefaultImages() []corev1.ContainerImage {
	images := []struct {
		ref  string
		size int64
	}{
		{"registry.k8s.io/pause:3.10", 320_368},
		{"registry.k8s.io/kube-proxy:v1.32.0", 30_907_858},
		{"registry.k8s.io/coredns/coredns:v1.11.3", 18_562_039},
	}
	out := make([]corev1.ContainerImage, len(images))
	for i, im := range images {
		out[i] = corev1.ContainerImage{Names: []string{imageID(im.ref), im.ref}, SizeBytes: im.size}
	}
	return out
}

// imageID is a stable made-up digest reference for image, shaped like the
// image IDs container runtimes report (repository@sha256:…).
func imageID(image string) string {
	sum := sha256.Sum256([]byte(image))
	return repository(image) + "@sha256:" + hex.EncodeToString(sum[:])
}

// repository is image without its tag or digest (a ':' before the last
// '/' is a registry port, not a tag).
func repository(image string) string {
	if i := strings.IndexByte(image, '@'); i >= 0 {
		return image[:i]
	}
	if i := strings.LastIndexByte(image, ':'); i > strings.LastIndexByte(image, '/') {
		return image[:i]
	}
	return image
}

func newNode(o Options, i int) *node {
	name := o.Prefix + strconv.Itoa(i+1)
	n := &node{name: name, hostIP: nodeIP(i), podNet: podCIDR(i)}
	n.labels = map[string]string{
		corev1.LabelHostname:      name,
		corev1.LabelOSStable:      "linux",
		corev1.LabelArchStable:    "amd64",
		"beta.kubernetes.io/os":   "linux",
		"beta.kubernetes.io/arch": "amd64",
		InstanceTypeLabel:         InstanceType,
	}
	for k, v := range o.Labels {
		n.labels[k] = v
	}
	n.spec = corev1.NodeSpec{PodCIDR: n.podNet.String(), PodCIDRs: []string{n.podNet.String()},
		ProviderID: "kubegate://" + name, Taints: append([]corev1.Taint(nil), o.Taints...)}
	resources := corev1.ResourceList{
		corev1.ResourceCPU:              o.CPU.DeepCopy(),
		corev1.ResourceMemory:           o.Memory.DeepCopy(),
		corev1.ResourcePods:             o.Pods.DeepCopy(),
		corev1.ResourceEphemeralStorage: o.EphemeralStorage.DeepCopy(),
	}
	id := sha256.Sum256([]byte("kubegate node " + name))
	boot := sha256.Sum256([]byte("kubegate boot " + name))
	machineID := hex.EncodeToString(id[:16])
	n.status = corev1.NodeStatus{
		Capacity:    resources,
		Allocatable: resources.DeepCopy(),
		Phase:       corev1.NodeRunning,
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: n.hostIP.String()},
			{Type: corev1.NodeHostName, Address: name},
		},
		NodeInfo: corev1.NodeSystemInfo{
			MachineID: machineID, SystemUUID: uuidOf(id[16:32]), BootID: uuidOf(boot[:16]),
			KernelVersion: "6.1.0-kubegate", OSImage: "kubegate simulated node",
			ContainerRuntimeVersion: "kubegate://" + KubeletVersion, KubeletVersion: KubeletVersion,
			OperatingSystem: "linux", Architecture: "amd64",
		},
		Images: o.Images,
	}
	return n
}

func uuidOf(b []byte) string {
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// conditions are the node conditions of a healthy kubelet, with the
// kubelet's reasons and messages, heartbeat now.
func conditions(now metav1.Time) []corev1.NodeCondition {
	c := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	return []corev1.NodeCondition{
		c(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		c(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		c(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
		c(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
	}
}

// statusAt is the node's status with condition heartbeats at now; a
// condition whose status is unchanged from old keeps its transition time.
func (n *node) statusAt(now metav1.Time, old []corev1.NodeCondition) corev1.NodeStatus {
	st := *n.status.DeepCopy()
	st.Conditions = conditions(now)
	for i := range st.Conditions {
		for _, o := range old {
			if o.Type == st.Conditions[i].Type && o.Status == st.Conditions[i].Status && !o.LastTransitionTime.IsZero() {
				st.Conditions[i].LastTransitionTime = o.LastTransitionTime
			}
		}
	}
	return st
}

func (s *Simulator) now() metav1.Time { return metav1.NewTime(s.clock.Now()) }

// register creates each node, or updates the one that exists, then its
// lease.
func (s *Simulator) register(ctx context.Context) error {
	var first error
	var mu sync.Mutex
	s.forEachNode(ctx, func(ctx context.Context, n *node) {
		err := s.registerNode(ctx, n)
		if err == nil {
			err = s.renewLeaseErr(ctx, n)
		}
		if err != nil {
			mu.Lock()
			if first == nil {
				first = err
			}
			mu.Unlock()
		}
	})
	if first == nil {
		first = ctx.Err()
	}
	return first
}

func (s *Simulator) registerNode(ctx context.Context, n *node) error {
	nodes := s.client.CoreV1().Nodes()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := nodes.Get(ctx, n.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			obj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: n.labels}, Spec: *n.spec.DeepCopy(),
				Status: n.statusAt(s.now(), nil)}
			created, err := nodes.Create(ctx, obj, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("register node %s: %w", n.name, err)
			}
			n.uid = created.UID
			return nil
		}
		if err != nil {
			return fmt.Errorf("register node %s: %w", n.name, err)
		}
		// Ours: labels we set, taints, capacity, status. Theirs: other
		// labels, annotations, unschedulable, an already assigned pod CIDR.
		upd := cur.DeepCopy()
		if upd.Labels == nil {
			upd.Labels = map[string]string{}
		}
		for k, v := range n.labels {
			upd.Labels[k] = v
		}
		upd.Spec.Taints = append([]corev1.Taint(nil), n.spec.Taints...)
		if upd.Spec.PodCIDR == "" {
			upd.Spec.PodCIDR, upd.Spec.PodCIDRs = n.spec.PodCIDR, n.spec.PodCIDRs
		}
		if upd.Spec.ProviderID == "" {
			upd.Spec.ProviderID = n.spec.ProviderID
		}
		if upd, err = nodes.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("register node %s: %w", n.name, err)
		}
		upd.Status = n.statusAt(s.now(), cur.Status.Conditions)
		if _, err := nodes.UpdateStatus(ctx, upd, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("register node %s: status: %w", n.name, err)
		}
		n.uid = upd.UID
		return nil
	})
}

// forEachNode calls f for every node still present, a few at a time, and
// waits for them.
func (s *Simulator) forEachNode(ctx context.Context, f func(context.Context, *node)) {
	sem := make(chan struct{}, s.opts.Workers)
	var wg sync.WaitGroup
	for _, name := range s.names {
		n := s.nodes[name]
		if n.gone.Load() || ctx.Err() != nil {
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			f(ctx, n)
		}()
	}
	wg.Wait()
}

func (s *Simulator) renewLease(ctx context.Context, n *node) {
	if err := s.renewLeaseErr(ctx, n); err != nil && ctx.Err() == nil {
		s.log.Warn("renew node lease", "node", n.name, "err", err)
	}
}

// renewLeaseErr writes the node's lease with renewTime now: an update of
// the lease last written, or on a conflict or a missing lease, a fresh read
// and then an update or a create.
func (s *Simulator) renewLeaseErr(ctx context.Context, n *node) error {
	n.leaseMu.Lock()
	defer n.leaseMu.Unlock()
	leases := s.client.CoordinationV1().Leases(LeaseNamespace)
	now := metav1.NewMicroTime(s.clock.Now())
	if n.lease != nil {
		l := n.lease.DeepCopy()
		l.Spec.RenewTime = &now
		got, err := leases.Update(ctx, l, metav1.UpdateOptions{})
		if err == nil {
			n.lease = got
			return nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("lease %s/%s: %w", LeaseNamespace, n.name, err)
		}
		n.lease = nil
	}
	cur, err := leases.Get(ctx, n.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		cur = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: n.name, Namespace: LeaseNamespace}}
	case err != nil:
		return fmt.Errorf("lease %s/%s: %w", LeaseNamespace, n.name, err)
	}
	cur.Spec.HolderIdentity = ptr.To(n.name)
	cur.Spec.LeaseDurationSeconds = ptr.To[int32](LeaseDurationSeconds)
	cur.Spec.RenewTime = &now
	if n.uid != "" {
		cur.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.name, UID: n.uid}}
	}
	if cur.ResourceVersion == "" {
		cur, err = leases.Create(ctx, cur, metav1.CreateOptions{})
	} else {
		cur, err = leases.Update(ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("lease %s/%s: %w", LeaseNamespace, n.name, err)
	}
	n.lease = cur
	return nil
}

// updateStatus refreshes the node's condition heartbeats. A node deleted by
// someone else is not recreated (a kubelet registers once): it is dropped.
func (s *Simulator) updateStatus(ctx context.Context, n *node) {
	nodes := s.client.CoreV1().Nodes()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := nodes.Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status = n.statusAt(s.now(), cur.Status.Conditions)
		_, err = nodes.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	switch {
	case apierrors.IsNotFound(err):
		n.gone.Store(true)
		s.log.Warn("simulated node was deleted; no longer simulating it", "node", n.name)
	case err != nil && ctx.Err() == nil:
		s.log.Warn("update node status", "node", n.name, "err", err)
	}
}
