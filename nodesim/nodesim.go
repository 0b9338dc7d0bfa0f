// Package nodesim runs simulated nodes: an API client that does a kubelet's
// bookkeeping without running anything, so that pods bound by a scheduler
// have somewhere to go (like KWOK).
//
// For each node it registers a Node object (capacity, allocatable,
// conditions, addresses, node info, images, labels, taints; an existing
// Node of the same name is updated), renews the node's Lease in
// kube-node-lease every HeartbeatInterval and refreshes the node's
// condition heartbeats through nodes/status every StatusInterval.
//
// It watches pods bound to its nodes (one watch, spec.nodeName!=, filtered
// by node name). A new pod shows ContainerCreating (phase Pending, hostIP
// set) and, RunningDelay later, becomes Running through pods/status (with
// no RunningDelay it goes straight to Running): a podIP from the node's pod CIDR, the
// PodReadyToStartContainers, Initialized, ContainersReady and Ready
// conditions, and running container statuses. Init containers are reported
// as completed. No process is run; what a pod's containers do is set by
// its annotations (AnnotationReadyAfter, AnnotationCompleteAfter,
// AnnotationExitCode) or else the node's Options (ReadyAfter,
// CompleteAfter, ExitCode): Ready that long after they start, and exited
// that long after they start with that code, then restarted or finished
// (Succeeded or Failed) as the pod's restartPolicy says. Without either,
// a pod whose restartPolicy is Never or OnFailure exits after
// Options.PodRunTime, and any other pod stays Running until it is deleted
// (docs/kubernetes-behaviour.md, G.13). A pod being deleted (deletionTimestamp set) has its containers
// reported terminated (exit code 0, phase Succeeded; a finished pod keeps
// its status) and is then deleted
// with grace period 0 and a UID precondition, at once: simulated
// containers need no grace period.
//
// With Options.Bootstrap each node first gets its own client certificate
// for system:node:NAME through the CSR API, starting from a bootstrap
// token, and keeps it renewed, as a kubelet does
// (docs/kubernetes-behaviour.md, H.5); see Bootstrap.
//
// The identity it runs as needs: nodes get, create, update; nodes/status
// update; leases in kube-node-lease get, create, update; pods list, watch,
// delete; pods/status update.
package nodesim

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// Defaults applied by New to zero Options fields.
const (
	DefaultPrefix            = "node-"
	DefaultHeartbeatInterval = 10 * time.Second // kubelet's nodeLeaseRenewInterval
	DefaultStatusInterval    = time.Minute
	DefaultRunningDelay      = time.Second // what the command line uses; the zero Options value means at once
	DefaultWorkers           = 8
	// DefaultPodRunTime is what the command line uses for
	// Options.PodRunTime (the zero value means such pods run until
	// deleted): long enough to see a Job's pod Running, short enough
	// that `kubectl wait --for=condition=complete` and `helm test` do
	// not wait on it.
	DefaultPodRunTime = 2 * time.Second

	// MaxCount is how many nodes one simulator can give distinct pod CIDRs
	// (/24s inside 10.0.0.0/8 that avoid the node addresses).
	MaxCount = 32768
	// MaxPods is the most pods one node's /24 pod CIDR can address.
	MaxPods = 253

	// LeaseNamespace holds the nodes' heartbeat leases.
	LeaseNamespace = corev1.NamespaceNodeLease
	// LeaseDurationSeconds is the lease duration written, kubelet's default.
	LeaseDurationSeconds = 40
	// KubeletVersion is reported in every node's nodeInfo.
	KubeletVersion = "v1.32.0-kubegate"
)

// Default resource capacities of a simulated node.
var (
	DefaultCPU              = resource.MustParse("4")
	DefaultMemory           = resource.MustParse("16Gi")
	DefaultPods             = resource.MustParse("110")
	DefaultEphemeralStorage = resource.MustParse("100Gi")
)

// Options describe the simulated nodes. Every node gets the same capacity,
// labels and taints; they differ by name, addresses and pod CIDR.
type Options struct {
	// Count is the number of nodes, 1 to MaxCount.
	Count int
	// Prefix names the nodes Prefix1 … PrefixCount; "" means DefaultPrefix.
	Prefix string
	// Capacity (and allocatable, which equals it). Zero quantities mean
	// DefaultCPU, DefaultMemory, DefaultPods (at most MaxPods) and
	// DefaultEphemeralStorage.
	CPU, Memory, Pods, EphemeralStorage resource.Quantity
	// Labels are added to the standard node labels and may override them;
	// nil means none.
	Labels map[string]string
	// Taints are set on every node; nil means none.
	Taints []corev1.Taint
	// Images are the images the nodes report as present; nil means
	// DefaultImages().
	Images []corev1.ContainerImage
	// RunningDelay is how long a bound pod shows ContainerCreating before it
	// is Running; zero means it goes to Running at once.
	RunningDelay time.Duration
	// ReadyAfter is how long after its containers start a pod becomes
	// Ready, for pods without the AnnotationReadyAfter annotation; zero
	// means at once.
	ReadyAfter time.Duration
	// CompleteAfter is how long after they start a pod's containers exit,
	// for pods without the AnnotationCompleteAfter annotation; zero means
	// they never do.
	CompleteAfter time.Duration
	// ExitCode is the code they exit with, for pods without the
	// AnnotationExitCode annotation: 0 to 255.
	ExitCode int32
	// PodRunTime is how long after they start the containers of a pod
	// whose restartPolicy is Never or OnFailure exit, when neither
	// CompleteAfter nor the pod's AnnotationCompleteAfter says otherwise,
	// so that Jobs and test pods finish (docs/kubernetes-behaviour.md,
	// G.13); zero means such pods run until deleted. Pods that restart
	// Always are not affected.
	PodRunTime time.Duration
	// HeartbeatInterval is how often leases are renewed; zero means
	// DefaultHeartbeatInterval.
	HeartbeatInterval time.Duration
	// StatusInterval is how often condition heartbeats are written to
	// nodes/status; zero means DefaultStatusInterval.
	StatusInterval time.Duration
	// Workers is how many pod status writes run at once; zero means
	// DefaultWorkers.
	Workers int
	// Clock drives heartbeats, delays and timestamps; nil means the real
	// clock.
	Clock Clock
	// Logger receives status lines; nil means slog.Default().
	Logger *slog.Logger
	// Bootstrap, when set, makes each node get its own client
	// certificate through the CSR API before it registers, and keep it
	// renewed (H.5); nil means the nodes have no identity of their own.
	Bootstrap *Bootstrap
}

// Clock is what the simulator needs of a clock: k8s.io/utils/clock's
// RealClock and its testing FakeClock both qualify.
type Clock interface {
	clock.WithTicker
	clock.WithDelayedExecution
}

// Validate reports the first invalid field of o, after defaults.
func (o Options) Validate() error {
	_, err := o.withDefaults()
	return err
}

// withDefaults returns o with zero fields defaulted, or an error naming the
// first invalid field.
func (o Options) withDefaults() (Options, error) {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	for _, q := range []struct {
		v   *resource.Quantity
		def resource.Quantity
	}{{&o.CPU, DefaultCPU}, {&o.Memory, DefaultMemory}, {&o.Pods, DefaultPods}, {&o.EphemeralStorage, DefaultEphemeralStorage}} {
		if q.v.IsZero() {
			*q.v = q.def.DeepCopy()
		}
	}
	if o.Images == nil {
		o.Images = DefaultImages()
	}
	if o.HeartbeatInterval == 0 {
		o.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if o.StatusInterval == 0 {
		o.StatusInterval = DefaultStatusInterval
	}
	if o.Workers == 0 {
		o.Workers = DefaultWorkers
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	switch {
	case o.Count < 1 || o.Count > MaxCount:
		return o, fmt.Errorf("count %d: want 1 to %d", o.Count, MaxCount)
	case o.CPU.Sign() < 0:
		return o, fmt.Errorf("cpu %s: must not be negative", o.CPU.String())
	case o.Memory.Sign() < 0:
		return o, fmt.Errorf("memory %s: must not be negative", o.Memory.String())
	case o.EphemeralStorage.Sign() < 0:
		return o, fmt.Errorf("ephemeral-storage %s: must not be negative", o.EphemeralStorage.String())
	case o.Pods.Sign() < 0 || o.Pods.Cmp(*resource.NewQuantity(MaxPods, resource.DecimalSI)) > 0:
		return o, fmt.Errorf("pods %s: want 1 to %d (one /24 pod CIDR per node)", o.Pods.String(), MaxPods)
	case o.RunningDelay < 0:
		return o, fmt.Errorf("running delay %v: must not be negative", o.RunningDelay)
	case o.ReadyAfter < 0:
		return o, fmt.Errorf("ready after %v: must not be negative", o.ReadyAfter)
	case o.CompleteAfter < 0:
		return o, fmt.Errorf("complete after %v: must not be negative", o.CompleteAfter)
	case o.ExitCode < 0 || o.ExitCode > 255:
		return o, fmt.Errorf("exit code %d: want 0 to 255", o.ExitCode)
	case o.PodRunTime < 0:
		return o, fmt.Errorf("pod run time %v: must not be negative", o.PodRunTime)
	case o.HeartbeatInterval < 0:
		return o, fmt.Errorf("heartbeat interval %v: must not be negative", o.HeartbeatInterval)
	case o.StatusInterval < 0:
		return o, fmt.Errorf("status interval %v: must not be negative", o.StatusInterval)
	case o.Workers < 0:
		return o, fmt.Errorf("workers %d: must not be negative", o.Workers)
	}
	if errs := validation.IsDNS1123Subdomain(o.Prefix + fmt.Sprint(o.Count)); len(errs) > 0 {
		return o, fmt.Errorf("name prefix %q: node name %q: %s", o.Prefix, o.Prefix+fmt.Sprint(o.Count), errs[0])
	}
	if err := validateLabels(o.Labels); err != nil {
		return o, err
	}
	for _, t := range o.Taints {
		if err := validateTaint(t); err != nil {
			return o, err
		}
	}
	return o, nil
}

// Simulator runs the simulated nodes; create it with New, start it with Run.
type Simulator struct {
	opts   Options
	client kubernetes.Interface
	log    *slog.Logger
	clock  Clock
	nodes  map[string]*node // by name; fixed after New
	names  []string         // in order
	pods   *podSync
	creds  map[string]*credential // by node name, with Options.Bootstrap
	// registered is closed once every node and lease is written.
	registered chan struct{}
}

// New validates opts and prepares the nodes; nothing is written until Run.
func New(client kubernetes.Interface, opts Options) (*Simulator, error) {
	if client == nil {
		return nil, errors.New("nodesim: no API client")
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("nodesim: %w", err)
	}
	s := &Simulator{opts: o, client: client, log: o.Logger, clock: o.Clock, nodes: make(map[string]*node, o.Count),
		registered: make(chan struct{})}
	for i := range o.Count {
		n := newNode(o, i)
		s.nodes[n.name] = n
		s.names = append(s.names, n.name)
	}
	if o.Bootstrap != nil {
		if o.Bootstrap.Config == nil {
			return nil, errors.New("nodesim: bootstrap: no bootstrap config")
		}
		s.creds = make(map[string]*credential, len(s.names))
		for _, name := range s.names {
			c, err := newCredential(o.Bootstrap, name)
			if err != nil {
				return nil, fmt.Errorf("nodesim: %w", err)
			}
			s.creds[name] = c
		}
	}
	s.pods = newPodSync(s)
	return s, nil
}

// Registered is closed once Run has written every Node and Lease; bound
// pods are handled from then on.
func (s *Simulator) Registered() <-chan struct{} { return s.registered }

// NodeNames returns the names of the simulated nodes, in order.
func (s *Simulator) NodeNames() []string { return append([]string(nil), s.names...) }

// NodeConfig returns a client config that authenticates as node name
// with its current client certificate, or nil without Options.Bootstrap
// or for a name that is not a simulated node.
func (s *Simulator) NodeConfig(name string) *rest.Config {
	c, ok := s.creds[name]
	if !ok {
		return nil
	}
	return rest.CopyConfig(c.config)
}

// NodeCertificate returns node name's current client certificate, or nil
// if it has none (yet).
func (s *Simulator) NodeCertificate(name string) *tls.Certificate {
	c, ok := s.creds[name]
	if !ok {
		return nil
	}
	return c.mgr.Current()
}

// bootstrap starts every node's certificate manager and waits until each
// has its certificate.
func (s *Simulator) bootstrap(ctx context.Context) error {
	for _, name := range s.names {
		s.creds[name].start(ctx)
	}
	for _, name := range s.names {
		c := s.creds[name]
		if err := c.waitForCertificate(ctx); err != nil {
			return err
		}
		leaf := c.mgr.Current().Leaf
		s.log.Info("node client certificate issued", "node", name, "serial", leaf.SerialNumber.String(), "notAfter", leaf.NotAfter)
	}
	return nil
}

// Run registers the nodes and their leases, then heartbeats them and
// drives the pods bound to them until ctx is done. It returns an error if
// registration fails, and nil once ctx is done. Call it once.
func (s *Simulator) Run(ctx context.Context) error {
	// The tickers exist before the first write, so that a clock moved
	// after the nodes are visible always reaches them.
	leaseTick := s.clock.NewTicker(s.opts.HeartbeatInterval)
	defer leaseTick.Stop()
	statusTick := s.clock.NewTicker(s.opts.StatusInterval)
	defer statusTick.Stop()
	if s.creds != nil {
		if err := s.bootstrap(ctx); err != nil {
			return nil // ctx is done
		}
	}
	if err := s.register(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	close(s.registered)
	s.log.Info("simulated nodes registered", "count", len(s.names), "first", s.names[0], "last", s.names[len(s.names)-1])
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.pods.run(ctx)
	}()
	for {
		select {
		case <-ctx.Done():
			<-done
			return nil
		case <-leaseTick.C():
			s.forEachNode(ctx, s.renewLease)
		case <-statusTick.C():
			s.forEachNode(ctx, s.updateStatus)
		}
	}
}

// Run is New followed by Simulator.Run.
func Run(ctx context.Context, client kubernetes.Interface, opts Options) error {
	s, err := New(client, opts)
	if err != nil {
		return err
	}
	return s.Run(ctx)
}
