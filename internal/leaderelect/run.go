package leaderelect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

// ErrLost is what Run returns, wrapped, when the lease was lost: not
// renewed within the renew deadline, or taken by another holder. The
// component must stop acting at once; kube's components exit.
var ErrLost = errors.New("lost leadership")

// Config is what Run needs besides the Options.
type Config struct {
	Options
	// Client reaches the API server as the component (its kubeconfig with
	// --master and --kube-api-content-type applied). The lock uses a copy
	// with client-go's timeout for it, the LeaderElection events another.
	Client *rest.Config
	// Component is the source of the LeaderElection events:
	// kube-controller-manager, or the scheduler's name (default-scheduler),
	// as kube's components name it.
	Component string
	// Identity is the holder identity written in the Lease; empty means
	// Identity().
	Identity string
	// Logger receives "became leader", "lost leadership" and the
	// election's own lines; nil means slog.Default().
	Logger *slog.Logger
}

// Identity returns a new holder identity as kube's components make it:
// the host name, "_", and a random UUID, so that two processes on one
// host differ.
func Identity() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("leader election identity: %w", err)
	}
	return host + "_" + string(uuid.NewUUID()), nil
}

// Run runs lead while c's Lease is held, or at once, for as long as it
// runs, when c.LeaderElect is off.
//
// Standing by, Run waits for the lease; when ctx ends first it returns
// nil. Leading, it gives lead a context that ends with ctx or with the
// lease; when ctx ends it waits for lead to return and only then releases
// the lease (its holder emptied, as client-go's ReleaseOnCancel would), so
// that a successor takes over at its next retry but never while this
// process still acts. It returns what lead returned, or, when the lease
// was lost, an error wrapping ErrLost at once, without waiting for lead.
// A lead that returns on its own also releases the lease.
//
// The elector itself never releases (ReleaseOnCancel is off): client-go
// releases before it ends the leader's context, and a release that waits
// on an API server that does not answer would keep a leader that failed
// to renew acting past the lease's duration, when a standby may already
// lead. Without it the leader's context ends as soon as a renewal has
// failed for the renew deadline, which is shorter than the lease (J.1).
func Run(ctx context.Context, c Config, lead func(context.Context) error) error {
	if !c.LeaderElect {
		return lead(ctx)
	}
	if err := c.Validate(); err != nil {
		return err
	}
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	id := c.Identity
	if id == "" {
		var err error
		if id, err = Identity(); err != nil {
			return err
		}
	}
	events, err := kubernetes.NewForConfig(c.Client)
	if err != nil {
		return err
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: events.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	lock, err := resourcelock.NewFromKubeconfig(c.ResourceLock, c.ResourceNamespace, c.ResourceName,
		resourcelock.ResourceLockConfig{Identity: id,
			EventRecorder: broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: c.Component})},
		c.Client, c.RenewDeadline.Duration)
	if err != nil {
		return fmt.Errorf("lease %s: %w", c.lease(), err)
	}
	return run(ctx, c, lock, log, lead)
}

// run is Run on lock, whose identity is the holder's.
func run(ctx context.Context, c Config, lock resourcelock.Interface, log *slog.Logger, lead func(context.Context) error) error {
	id := lock.Identity()
	log = log.With("lease", c.lease())
	// The election has a context of its own, ended by this process only
	// when it stops on purpose: standing by, as soon as ctx ends; leading,
	// once lead has returned. A lease the election gives up otherwise was
	// lost.
	electCtx, stopElection := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElection()
	var (
		mu       sync.Mutex
		leading  bool  // lead was started
		stopping bool  // this process ended the election
		leadErr  error // what lead returned
		// leadDone is closed once lead has returned, by the goroutine
		// the elector starts it in when it acquires the lease.
		leadDone = make(chan struct{})
	)
	stop := func() {
		mu.Lock()
		stopping = true
		mu.Unlock()
		stopElection()
	}
	defer context.AfterFunc(ctx, func() {
		mu.Lock()
		l := leading
		mu.Unlock()
		if !l {
			stop() // nothing to hand over
		}
	})()
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		Name:            c.ResourceName,
		LeaseDuration:   c.LeaseDuration.Duration,
		RenewDeadline:   c.RenewDeadline.Duration,
		RetryPeriod:     c.RetryPeriod.Duration,
		ReleaseOnCancel: false, // released below, once lead has returned
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leaseCtx context.Context) {
				defer close(leadDone)
				mu.Lock()
				leading = true
				mu.Unlock()
				log.Info("became leader", "identity", id)
				leadCtx, cancel := context.WithCancel(leaseCtx)
				defer cancel()
				defer context.AfterFunc(ctx, cancel)()
				err := lead(leadCtx)
				mu.Lock()
				leadErr = err
				mu.Unlock()
				stop()
			},
			OnStoppedLeading: func() {},
			OnNewLeader: func(holder string) {
				if holder != id && holder != "" { // "": released
					log.Info("leader elected", "identity", holder)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("lease %s: %w", c.lease(), err)
	}
	log.Info("waiting for leadership", "identity", id)
	le.Run(klog.NewContext(electCtx, logr.FromSlogHandler(log.Handler())))

	mu.Lock()
	lost := !stopping
	mu.Unlock()
	if lost {
		log.Info("lost leadership", "identity", id)
		return fmt.Errorf("%w of lease %s: not renewed within %s %v, or taken by another holder", ErrLost, c.lease(),
			flagRenewDeadline, c.RenewDeadline.Duration)
	}
	if le.IsLeader() {
		// The lease was acquired, so lead was started, perhaps only
		// as ctx ended: the lease goes once lead has returned.
		<-leadDone
		if err := release(lock, id, c.RenewDeadline.Duration); err != nil {
			log.Warn("could not release the lease; a successor takes over once it expires", "error", err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return leadErr
}

// release empties the holder of the lease if id still holds it, as
// client-go's elector releases: a lease of one second that a standby may
// take at once. The update carries the resourceVersion read, so a lease
// another holder took in between is left as it is.
func release(lock resourcelock.Interface, id string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	rec, _, err := lock.Get(ctx)
	if err != nil {
		return err
	}
	if rec.HolderIdentity != id {
		return nil
	}
	now := metav1.NewTime(time.Now())
	return lock.Update(ctx, resourcelock.LeaderElectionRecord{LeaderTransitions: rec.LeaderTransitions,
		LeaseDurationSeconds: 1, RenewTime: now, AcquireTime: now})
}
