package scheduler

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/kubegate/kubegate/scheduler/config"
	"github.com/kubegate/kubegate/scheduler/framework"
	"github.com/kubegate/kubegate/scheduler/plugins"
)

// Cluster is an offline cluster: nodes, the pods assigned to them, and the
// objects default spreading looks at.
type Cluster struct {
	Nodes   []*v1.Node
	Pods    []*v1.Pod
	Objects plugins.Objects
}

var docSep = regexp.MustCompile(`(?m)^---\s*$`)

// LoadCluster reads YAML or JSON documents (separated by "---"): Node,
// Pod (with spec.nodeName), Service, ReplicaSet, StatefulSet,
// ReplicationController, or a List of them.
func LoadCluster(r io.Reader) (*Cluster, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	c := &Cluster{}
	for i, doc := range docSep.Split(string(data), -1) {
		if len(bytes.TrimSpace([]byte(doc))) == 0 {
			continue
		}
		if err := c.add([]byte(doc)); err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
	}
	if len(c.Nodes) == 0 {
		return nil, fmt.Errorf("no Node objects found")
	}
	return c, nil
}

type typeMeta struct {
	Kind  string    `json:"kind"`
	Items []rawItem `json:"items"`
}

// rawItem is a list item, re-encoded and decoded by its own kind.
type rawItem = map[string]any

func (c *Cluster) add(doc []byte) error {
	var tm typeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	switch tm.Kind {
	case "List", "NodeList", "PodList":
		for _, item := range tm.Items {
			b, err := yaml.Marshal(item)
			if err != nil {
				return err
			}
			if err := c.add(b); err != nil {
				return err
			}
		}
		return nil
	case "Node":
		var n v1.Node
		if err := yaml.UnmarshalStrict(doc, &n); err != nil {
			return err
		}
		c.Nodes = append(c.Nodes, &n)
	case "Pod":
		var p v1.Pod
		if err := yaml.UnmarshalStrict(doc, &p); err != nil {
			return err
		}
		if p.Spec.NodeName == "" {
			return fmt.Errorf("pod %s: spec.nodeName is empty (the cluster file holds assigned pods only)", p.Name)
		}
		defaultPod(&p, len(c.Pods))
		c.Pods = append(c.Pods, &p)
	case "Service":
		var s v1.Service
		if err := yaml.UnmarshalStrict(doc, &s); err != nil {
			return err
		}
		defaultNamespace(&s.Namespace)
		c.Objects.ServiceList = append(c.Objects.ServiceList, &s)
	case "ReplicaSet":
		var s appsv1.ReplicaSet
		if err := yaml.UnmarshalStrict(doc, &s); err != nil {
			return err
		}
		defaultNamespace(&s.Namespace)
		c.Objects.ReplicaSetList = append(c.Objects.ReplicaSetList, &s)
	case "StatefulSet":
		var s appsv1.StatefulSet
		if err := yaml.UnmarshalStrict(doc, &s); err != nil {
			return err
		}
		defaultNamespace(&s.Namespace)
		c.Objects.StatefulSetList = append(c.Objects.StatefulSetList, &s)
	case "ReplicationController":
		var s v1.ReplicationController
		if err := yaml.UnmarshalStrict(doc, &s); err != nil {
			return err
		}
		defaultNamespace(&s.Namespace)
		c.Objects.ReplicationControllerList = append(c.Objects.ReplicationControllerList, &s)
	case "":
		return fmt.Errorf("kind is missing")
	default:
		return fmt.Errorf("kind %q: want Node, Pod, Service, ReplicaSet, StatefulSet, ReplicationController or List", tm.Kind)
	}
	return nil
}

func defaultNamespace(ns *string) {
	if *ns == "" {
		*ns = "default"
	}
}

func defaultPod(p *v1.Pod, i int) {
	defaultNamespace(&p.Namespace)
	if p.UID == "" {
		p.UID = types.UID(fmt.Sprintf("offline-%s-%s-%d", p.Namespace, p.Name, i))
	}
	if p.Spec.SchedulerName == "" {
		p.Spec.SchedulerName = framework.DefaultSchedulerName
	}
}

// LoadPod reads one Pod from YAML or JSON.
func LoadPod(r io.Reader) (*v1.Pod, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var p v1.Pod
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return nil, err
	}
	if p.Kind != "" && p.Kind != "Pod" {
		return nil, fmt.Errorf("kind %q: want Pod", p.Kind)
	}
	if p.Name == "" {
		return nil, fmt.Errorf("metadata.name is empty")
	}
	p.Spec.NodeName = ""
	defaultPod(&p, -1)
	return &p, nil
}

// ScheduleOffline schedules pod onto cluster with the profile of cfg that
// matches the pod's scheduler name (nil cfg: the default profile). Ties
// are broken by intN (nil: random).
func ScheduleOffline(ctx context.Context, cluster *Cluster, pod *v1.Pod, cfg *config.Configuration, intN func(int) int) (*framework.Result, error) {
	if cfg == nil {
		cfg = config.Default()
	}
	profiles, err := cfg.Build(&cluster.Objects)
	if err != nil {
		return nil, err
	}
	prof := profiles[0]
	for _, p := range profiles {
		if p.SchedulerName == pod.Spec.SchedulerName {
			prof = p
		}
	}
	fw, err := framework.New(prof)
	if err != nil {
		return nil, err
	}
	fw.IntN = intN
	return fw.Schedule(ctx, framework.NewSnapshot(cluster.Nodes, cluster.Pods), pod)
}
