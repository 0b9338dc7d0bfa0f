package apiserver

import (
	"bytes"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// tableDef is how a resource is shown by kubectl get: its columns and a
// function giving the cells of one object (after NAME, before or after AGE
// as the columns say).
type tableDef struct {
	columns []metav1.TableColumnDefinition
	cells   func(obj runtime.Object, now time.Time) []any
}

var (
	nameColumn = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name",
		Description: "Name must be unique within a namespace. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"}
	ageColumn = metav1.TableColumnDefinition{Name: "Age", Type: "string",
		Description: "CreationTimestamp is a timestamp representing the server time when this object was created."}
)

// defaultTable shows NAME and AGE.
var defaultTable = &tableDef{
	columns: []metav1.TableColumnDefinition{nameColumn, ageColumn},
	cells: func(obj runtime.Object, now time.Time) []any {
		acc, _ := meta.Accessor(obj)
		return []any{acc.GetName(), age(acc.GetCreationTimestamp(), now)}
	},
}

func age(ts metav1.Time, now time.Time) string {
	if ts.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(ts.Time))
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

var namespaceTable = &tableDef{
	columns: []metav1.TableColumnDefinition{nameColumn,
		{Name: "Status", Type: "string", Description: "The status of the namespace"}, ageColumn},
	cells: func(obj runtime.Object, now time.Time) []any {
		ns := obj.(*corev1.Namespace)
		return []any{ns.Name, string(ns.Status.Phase), age(ns.CreationTimestamp, now)}
	},
}

var nodeTable = &tableDef{
	columns: []metav1.TableColumnDefinition{nameColumn,
		{Name: "Status", Type: "string", Description: "The status of the node"},
		{Name: "Roles", Type: "string", Description: "The roles of the node"},
		ageColumn,
		{Name: "Version", Type: "string", Description: "Kubelet Version reported by the node."},
		{Name: "Internal-IP", Type: "string", Priority: 1, Description: "List of addresses reachable to the node."},
		{Name: "External-IP", Type: "string", Priority: 1, Description: "List of addresses reachable to the node."},
		{Name: "OS-Image", Type: "string", Priority: 1, Description: "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy))."},
		{Name: "Kernel-Version", Type: "string", Priority: 1, Description: "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64)."},
		{Name: "Container-Runtime", Type: "string", Priority: 1, Description: "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2)."},
	},
	cells: func(obj runtime.Object, now time.Time) []any {
		n := obj.(*corev1.Node)
		status := "Unknown"
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				status = map[corev1.ConditionStatus]string{corev1.ConditionTrue: "Ready", corev1.ConditionFalse: "NotReady"}[c.Status]
				if status == "" {
					status = "Unknown"
				}
			}
		}
		if n.Spec.Unschedulable {
			status += ",SchedulingDisabled"
		}
		var roles []string
		for k, v := range n.Labels {
			switch {
			case strings.HasPrefix(k, "node-role.kubernetes.io/"):
				if r := strings.TrimPrefix(k, "node-role.kubernetes.io/"); r != "" {
					roles = append(roles, r)
				}
			case k == "kubernetes.io/role" && v != "":
				roles = append(roles, v)
			}
		}
		sort.Strings(roles)
		addr := func(t corev1.NodeAddressType) string {
			for _, a := range n.Status.Addresses {
				if a.Type == t {
					return a.Address
				}
			}
			return "<none>"
		}
		info := n.Status.NodeInfo
		return []any{n.Name, status, orNone(strings.Join(roles, ",")), age(n.CreationTimestamp, now), info.KubeletVersion,
			addr(corev1.NodeInternalIP), addr(corev1.NodeExternalIP), orNone(info.OSImage), orNone(info.KernelVersion), orNone(info.ContainerRuntimeVersion)}
	},
}

var podTable = &tableDef{
	columns: []metav1.TableColumnDefinition{nameColumn,
		{Name: "Ready", Type: "string", Description: "The aggregate readiness state of this pod for accepting traffic."},
		{Name: "Status", Type: "string", Description: "The aggregate status of the containers in this pod."},
		{Name: "Restarts", Type: "string", Description: "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."},
		ageColumn,
		{Name: "IP", Type: "string", Priority: 1, Description: "IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated."},
		{Name: "Node", Type: "string", Priority: 1, Description: "NodeName is a request to schedule this pod onto a specific node."},
		{Name: "Nominated Node", Type: "string", Priority: 1, Description: "nominatedNodeName is set when this pod preempts other pods on the node."},
		{Name: "Readiness Gates", Type: "string", Priority: 1, Description: "If specified, all readiness gates will be evaluated for pod readiness."},
	},
	cells: podCells,
}

// podCells computes the READY, STATUS and RESTARTS columns the way kubectl
// shows them: the phase, overridden by the reason of the first failing init
// container or of a waiting or terminated container, and "Terminating" once
// the pod is being deleted.
func podCells(obj runtime.Object, now time.Time) []any {
	pod := obj.(*corev1.Pod)
	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	var restarts int32
	var lastRestart time.Time
	noteRestart := func(cs corev1.ContainerStatus) {
		restarts += cs.RestartCount
		if t := cs.LastTerminationState.Terminated; t != nil && t.FinishedAt.After(lastRestart) {
			lastRestart = t.FinishedAt.Time
		}
	}
	initializing := false
	for i, cs := range pod.Status.InitContainerStatuses {
		noteRestart(cs)
		if t := cs.State.Terminated; t != nil && t.ExitCode == 0 {
			continue
		}
		initializing = true
		switch t, w := cs.State.Terminated, cs.State.Waiting; {
		case t != nil && t.Reason != "":
			reason = "Init:" + t.Reason
		case t != nil && t.Signal != 0:
			reason = fmt.Sprintf("Init:Signal:%d", t.Signal)
		case t != nil:
			reason = fmt.Sprintf("Init:ExitCode:%d", t.ExitCode)
		case w != nil && w.Reason != "" && w.Reason != "PodInitializing":
			reason = "Init:" + w.Reason
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		break
	}
	ready := 0
	if !initializing {
		restarts, lastRestart = 0, time.Time{}
		running := false
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			cs := pod.Status.ContainerStatuses[i]
			noteRestart(cs)
			switch t, w := cs.State.Terminated, cs.State.Waiting; {
			case w != nil && w.Reason != "":
				reason = w.Reason
			case t != nil && t.Reason != "":
				reason = t.Reason
			case t != nil && t.Signal != 0:
				reason = fmt.Sprintf("Signal:%d", t.Signal)
			case t != nil:
				reason = fmt.Sprintf("ExitCode:%d", t.ExitCode)
			case cs.Ready && cs.State.Running != nil:
				running = true
				ready++
			}
		}
		if reason == "Completed" && running {
			reason = "Running"
		}
	}
	if pod.DeletionTimestamp != nil {
		reason = "Terminating"
		if pod.Status.Reason == "NodeLost" {
			reason = "Unknown"
		}
	}
	restartCell := fmt.Sprint(restarts)
	if !lastRestart.IsZero() {
		restartCell = fmt.Sprintf("%d (%s ago)", restarts, duration.HumanDuration(now.Sub(lastRestart)))
	}
	ip := pod.Status.PodIP
	if len(pod.Status.PodIPs) > 0 {
		ip = pod.Status.PodIPs[0].IP
	}
	gates := "<none>"
	if n := len(pod.Spec.ReadinessGates); n > 0 {
		passed := 0
		for _, g := range pod.Spec.ReadinessGates {
			for _, c := range pod.Status.Conditions {
				if c.Type == g.ConditionType && c.Status == corev1.ConditionTrue {
					passed++
				}
			}
		}
		gates = fmt.Sprintf("%d/%d", passed, n)
	}
	return []any{pod.Name, fmt.Sprintf("%d/%d", ready, len(pod.Spec.Containers)), reason, restartCell,
		age(pod.CreationTimestamp, now), orNone(ip), orNone(pod.Spec.NodeName), orNone(pod.Status.NominatedNodeName), gates}
}

// tableRequest is the TableOptions of a request.
type tableRequest struct {
	includeObject metav1.IncludeObjectPolicy
}

func (s *Server) tableRequest(r *http.Request) (*tableRequest, error) {
	p := metav1.IncludeObjectPolicy(r.URL.Query().Get("includeObject"))
	switch p {
	case "":
		p = metav1.IncludeMetadata
	case metav1.IncludeNone, metav1.IncludeMetadata, metav1.IncludeObject:
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("includeObject: unsupported value %q", p))
	}
	return &tableRequest{includeObject: p}, nil
}

// table renders obj (one object or a list) as a Table.
func (s *Server) table(r *http.Request, res *resource, obj runtime.Object) (*metav1.Table, error) {
	tr, err := s.tableRequest(r)
	if err != nil {
		return nil, err
	}
	return s.tableOf(tr, res, obj, true)
}

func (s *Server) tableOf(tr *tableRequest, res *resource, obj runtime.Object, headers bool) (*metav1.Table, error) {
	def := res.table
	if def == nil {
		def = defaultTable
	}
	t := &metav1.Table{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"}}
	if headers {
		t.ColumnDefinitions = def.columns
	}
	items := []runtime.Object{obj}
	if meta.IsListType(obj) {
		var err error
		if items, err = meta.ExtractList(obj); err != nil {
			return nil, err
		}
		la, _ := meta.ListAccessor(obj)
		t.ResourceVersion, t.Continue = la.GetResourceVersion(), la.GetContinue()
	} else {
		acc, _ := meta.Accessor(obj)
		t.ResourceVersion = acc.GetResourceVersion()
	}
	now := s.now()
	t.Rows = make([]metav1.TableRow, 0, len(items))
	for _, item := range items {
		row := metav1.TableRow{Cells: def.cells(item, now)}
		var embedded runtime.Object
		switch tr.includeObject {
		case metav1.IncludeObject:
			embedded = item
		case metav1.IncludeMetadata:
			acc, _ := meta.Accessor(item)
			pm := meta.AsPartialObjectMetadata(acc)
			pm.TypeMeta = metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}
			embedded = pm
		}
		if embedded != nil {
			var buf bytes.Buffer
			if err := s.json.Serializer.Encode(embedded, &buf); err != nil {
				return nil, err
			}
			row.Object.Raw = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}
