package server

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	flowcontrolapply "k8s.io/client-go/applyconfigurations/flowcontrol/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// flowSchemaStatusManager is the field manager of the Dangling condition,
// kube-apiserver's configuration consumer's.
const flowSchemaStatusManager = "api-priority-and-fairness-config-consumer-v1"

// syncRetry is how long a failed status write waits before it is tried
// again, when no change of a schema or a level comes first: a second,
// doubled after each failure in a row, up to a minute.
func syncRetry() wait.Backoff {
	return wait.Backoff{Duration: time.Second, Factor: 2, Cap: time.Minute, Steps: math.MaxInt32}
}

// StartFlowSchemaStatus keeps every FlowSchema's Dangling condition, as
// kube-apiserver's priority-and-fairness configuration consumer does
// (D.20): False with reason Found when the priority level it names
// exists, True with reason NotFound when not, applied to the status with
// the consumer's field manager. It runs as a client of cfg until ctx ends;
// stop returns once it has stopped.
func StartFlowSchemaStatus(ctx context.Context, cfg *restclient.Config, logger *slog.Logger) (stop func(), _ error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactory(client, 0)
	schemas := factory.Flowcontrol().V1().FlowSchemas()
	levels := factory.Flowcontrol().V1().PriorityLevelConfigurations()
	wake := make(chan struct{}, 1)
	kick := func(any) {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{AddFunc: kick, UpdateFunc: func(_, o any) { kick(o) }, DeleteFunc: kick}
	for _, inf := range []cache.SharedIndexInformer{schemas.Informer(), levels.Informer()} {
		if _, err := inf.AddEventHandler(handler); err != nil {
			cancel()
			return nil, err
		}
	}
	factory.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if !cache.WaitForCacheSync(ctx.Done(), schemas.Informer().HasSynced, levels.Informer().HasSynced) {
			return
		}
		backoff := syncRetry()
		for {
			var retry <-chan time.Time
			if err := syncDangling(ctx, client, schemas.Lister().List, levels.Lister().List); err != nil {
				logger.Warn("flowschema status", "err", err)
				retry = time.After(backoff.Step())
			} else {
				backoff = syncRetry()
			}
			select {
			case <-ctx.Done():
				return
			case <-wake:
			case <-retry:
			}
		}
	}()
	return func() {
		cancel()
		factory.Shutdown()
		wg.Wait()
	}, nil
}

// syncDangling applies the Dangling condition of each schema whose
// condition is not what the levels make it.
func syncDangling(ctx context.Context, client kubernetes.Interface,
	listSchemas func(labels.Selector) ([]*flowcontrolv1.FlowSchema, error),
	listLevels func(labels.Selector) ([]*flowcontrolv1.PriorityLevelConfiguration, error)) error {
	fss, err := listSchemas(labels.Everything())
	if err != nil {
		return err
	}
	pls, err := listLevels(labels.Everything())
	if err != nil {
		return err
	}
	exists := map[string]bool{}
	for _, pl := range pls {
		exists[pl.Name] = true
	}
	for _, fs := range fss {
		want := danglingCondition(fs.Spec.PriorityLevelConfiguration.Name, exists[fs.Spec.PriorityLevelConfiguration.Name])
		if have := currentDangling(fs); have != nil && have.Status == want.Status && have.Reason == want.Reason && have.Message == want.Message {
			continue
		}
		cond := flowcontrolapply.FlowSchemaCondition().WithType(want.Type).WithStatus(want.Status).WithReason(want.Reason).
			WithMessage(want.Message).WithLastTransitionTime(metav1.NewTime(time.Now().Truncate(time.Second)))
		apply := flowcontrolapply.FlowSchema(fs.Name).WithStatus(flowcontrolapply.FlowSchemaStatus().WithConditions(cond))
		if _, err := client.FlowcontrolV1().FlowSchemas().ApplyStatus(ctx, apply, metav1.ApplyOptions{FieldManager: flowSchemaStatusManager, Force: true}); err != nil {
			return fmt.Errorf("apply the status of flowschema %s: %w", fs.Name, err)
		}
	}
	return nil
}

func currentDangling(fs *flowcontrolv1.FlowSchema) *flowcontrolv1.FlowSchemaCondition {
	for i := range fs.Status.Conditions {
		if fs.Status.Conditions[i].Type == flowcontrolv1.FlowSchemaConditionDangling {
			return &fs.Status.Conditions[i]
		}
	}
	return nil
}

// danglingCondition is the condition kube's consumer gives a schema that
// names the priority level plName.
func danglingCondition(plName string, exists bool) flowcontrolv1.FlowSchemaCondition {
	if exists {
		return flowcontrolv1.FlowSchemaCondition{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionFalse, Reason: "Found",
			Message: fmt.Sprintf("This FlowSchema references the PriorityLevelConfiguration object named %q and it exists", plName)}
	}
	return flowcontrolv1.FlowSchemaCondition{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionTrue, Reason: "NotFound",
		Message: fmt.Sprintf("This FlowSchema references the PriorityLevelConfiguration object named %q but there is no such object", plName)}
}
