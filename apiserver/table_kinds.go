package apiserver

import (
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// The tables of kube's printers for the kinds kubegate serves besides pods
// (B.5). Descriptions are the API documentation of the fields shown, as
// kube's are; integer columns hold numbers, not strings.

var (
	ContainersColumn = metav1.TableColumnDefinition{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."}
	ImagesColumn     = metav1.TableColumnDefinition{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."}
)

// ContainerCells lists the names and the images of containers, each joined
// with commas.
func ContainerCells(containers []corev1.Container) (names, images string) {
	var n, i []string
	for _, c := range containers {
		n = append(n, c.Name)
		i = append(i, c.Image)
	}
	return strings.Join(n, ","), strings.Join(i, ",")
}

var namespaceTable = &TableDef{
	Columns: []metav1.TableColumnDefinition{NameColumn,
		{Name: "Status", Type: "string", Description: "The status of the namespace"}, AgeColumn},
	Cells: func(obj runtime.Object, now time.Time) []any {
		ns := obj.(*corev1.Namespace)
		return []any{ns.Name, string(ns.Status.Phase), Age(ns.CreationTimestamp, now)}
	},
}

var (
	nodeInfoDoc   = corev1.NodeSystemInfo{}.SwaggerDoc()
	nodeStatusDoc = corev1.NodeStatus{}.SwaggerDoc()
)

var nodeTable = &TableDef{
	Columns: []metav1.TableColumnDefinition{NameColumn,
		{Name: "Status", Type: "string", Description: "The status of the node"},
		{Name: "Roles", Type: "string", Description: "The roles of the node"},
		AgeColumn,
		{Name: "Version", Type: "string", Description: nodeInfoDoc["kubeletVersion"]},
		{Name: "Internal-IP", Type: "string", Priority: 1, Description: nodeStatusDoc["addresses"]},
		{Name: "External-IP", Type: "string", Priority: 1, Description: nodeStatusDoc["addresses"]},
		{Name: "OS-Image", Type: "string", Priority: 1, Description: nodeInfoDoc["osImage"]},
		{Name: "Kernel-Version", Type: "string", Priority: 1, Description: nodeInfoDoc["kernelVersion"]},
		{Name: "Container-Runtime", Type: "string", Priority: 1, Description: nodeInfoDoc["containerRuntimeVersion"]},
	},
	Cells: nodeCells,
}

// nodeCells shows a node Ready only when its Ready condition is True, and
// NotReady when that condition is False or Unknown; without the condition
// the node is Unknown.
func nodeCells(obj runtime.Object, now time.Time) []any {
	n := obj.(*corev1.Node)
	status := "Unknown"
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			status = "NotReady"
			if c.Status == corev1.ConditionTrue {
				status = "Ready"
			}
		}
	}
	if n.Spec.Unschedulable {
		status += ",SchedulingDisabled"
	}
	seen := map[string]bool{}
	var roles []string
	for k, v := range n.Labels {
		role := ""
		switch {
		case strings.HasPrefix(k, "node-role.kubernetes.io/"):
			role = strings.TrimPrefix(k, "node-role.kubernetes.io/")
		case k == "kubernetes.io/role":
			role = v
		}
		if role != "" && !seen[role] {
			seen[role] = true
			roles = append(roles, role)
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
	orUnknown := func(s string) string {
		if s == "" {
			return "<unknown>"
		}
		return s
	}
	info := n.Status.NodeInfo
	kernel := orUnknown(info.KernelVersion)
	if info.Architecture != "" {
		kernel += " (" + info.Architecture + ")"
	}
	return []any{n.Name, status, orNone(strings.Join(roles, ",")), Age(n.CreationTimestamp, now), info.KubeletVersion,
		addr(corev1.NodeInternalIP), addr(corev1.NodeExternalIP), orUnknown(info.OSImage), kernel, orUnknown(info.ContainerRuntimeVersion)}
}

var configMapTable = &TableDef{
	Columns: []metav1.TableColumnDefinition{NameColumn,
		{Name: "Data", Type: "string", Description: corev1.ConfigMap{}.SwaggerDoc()["data"]}, AgeColumn},
	Cells: func(obj runtime.Object, now time.Time) []any {
		cm := obj.(*corev1.ConfigMap)
		// Binary keys count too.
		return []any{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), Age(cm.CreationTimestamp, now)}
	},
}

var secretTable = &TableDef{
	Columns: []metav1.TableColumnDefinition{NameColumn,
		{Name: "Type", Type: "string", Description: corev1.Secret{}.SwaggerDoc()["type"]},
		{Name: "Data", Type: "string", Description: corev1.Secret{}.SwaggerDoc()["data"]},
		AgeColumn},
	Cells: func(obj runtime.Object, now time.Time) []any {
		s := obj.(*corev1.Secret)
		return []any{s.Name, string(s.Type), int64(len(s.Data)), Age(s.CreationTimestamp, now)}
	},
}

var serviceAccountTable = &TableDef{
	Columns: []metav1.TableColumnDefinition{NameColumn, AgeColumn},
	Cells: func(obj runtime.Object, now time.Time) []any {
		sa := obj.(*corev1.ServiceAccount)
		return []any{sa.Name, Age(sa.CreationTimestamp, now)}
	},
}

var serviceSpecDoc = corev1.ServiceSpec{}.SwaggerDoc()

var serviceTable = &TableDef{
	Columns: []metav1.TableColumnDefinition{NameColumn,
		{Name: "Type", Type: "string", Description: serviceSpecDoc["type"]},
		{Name: "Cluster-IP", Type: "string", Description: serviceSpecDoc["clusterIP"]},
		{Name: "External-IP", Type: "string", Description: serviceSpecDoc["externalIPs"]},
		{Name: "Port(s)", Type: "string", Description: serviceSpecDoc["ports"]},
		AgeColumn,
		{Name: "Selector", Type: "string", Priority: 1, Description: serviceSpecDoc["selector"]},
	},
	Cells: func(obj runtime.Object, now time.Time) []any {
		svc := obj.(*corev1.Service)
		clusterIP := "<none>"
		if len(svc.Spec.ClusterIPs) > 0 {
			clusterIP = svc.Spec.ClusterIPs[0]
		}
		var ports []string
		for _, p := range svc.Spec.Ports {
			if p.NodePort > 0 {
				ports = append(ports, fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol))
			} else {
				ports = append(ports, fmt.Sprintf("%d/%s", p.Port, p.Protocol))
			}
		}
		return []any{svc.Name, string(svc.Spec.Type), clusterIP, serviceExternalIP(svc), orNone(strings.Join(ports, ",")),
			Age(svc.CreationTimestamp, now), labels.FormatLabels(svc.Spec.Selector)}
	},
}

// serviceExternalIP is the External-IP cell: the external IPs, for a load
// balancer after its ingress addresses ("<pending>" while it has none), and
// the external name of an ExternalName service. kube-apiserver renders the
// wide form, which does not shorten long load balancer lists.
func serviceExternalIP(svc *corev1.Service) string {
	switch svc.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		return orNone(strings.Join(svc.Spec.ExternalIPs, ","))
	case corev1.ServiceTypeLoadBalancer:
		seen := map[string]bool{}
		var ips []string
		for _, in := range svc.Status.LoadBalancer.Ingress {
			a := in.IP
			if a == "" {
				a = in.Hostname
			}
			if a != "" && !seen[a] {
				seen[a] = true
				ips = append(ips, a)
			}
		}
		sort.Strings(ips)
		ips = append(ips, svc.Spec.ExternalIPs...)
		if len(ips) == 0 {
			return "<pending>"
		}
		return strings.Join(ips, ",")
	case corev1.ServiceTypeExternalName:
		return svc.Spec.ExternalName
	}
	return "<unknown>"
}

var eventDoc = corev1.Event{}.SwaggerDoc()

// eventColumns are the same for core and events.k8s.io events: kube
// prints both from one internal type.
var eventColumns = []metav1.TableColumnDefinition{
	{Name: "Last Seen", Type: "string", Description: eventDoc["lastTimestamp"]},
	{Name: "Type", Type: "string", Description: eventDoc["type"]},
	{Name: "Reason", Type: "string", Description: eventDoc["reason"]},
	{Name: "Object", Type: "string", Description: eventDoc["involvedObject"]},
	{Name: "Subobject", Type: "string", Priority: 1, Description: corev1.ObjectReference{}.SwaggerDoc()["fieldPath"]},
	{Name: "Source", Type: "string", Priority: 1, Description: eventDoc["source"]},
	{Name: "Message", Type: "string", Description: eventDoc["message"]},
	{Name: "First Seen", Type: "string", Priority: 1, Description: eventDoc["firstTimestamp"]},
	{Name: "Count", Type: "string", Priority: 1, Description: eventDoc["count"]},
	{Name: "Name", Type: "string", Format: "name", Priority: 1, Description: objectMetaDoc["name"]},
}

var coreEventTable = &TableDef{
	Columns: eventColumns,
	Cells: func(obj runtime.Object, now time.Time) []any {
		return eventCells(obj.(*corev1.Event), now)
	},
}

// eventsTable shows events.k8s.io events through their core form: the
// fields kube maps onto each other when it converts between the two.
var eventsTable = &TableDef{
	Columns: eventColumns,
	Cells: func(obj runtime.Object, now time.Time) []any {
		e := obj.(*eventsv1.Event)
		core := &corev1.Event{
			ObjectMeta:          e.ObjectMeta,
			InvolvedObject:      e.Regarding,
			Reason:              e.Reason,
			Message:             e.Note,
			Source:              e.DeprecatedSource,
			FirstTimestamp:      e.DeprecatedFirstTimestamp,
			LastTimestamp:       e.DeprecatedLastTimestamp,
			Count:               e.DeprecatedCount,
			Type:                e.Type,
			EventTime:           e.EventTime,
			ReportingController: e.ReportingController,
			ReportingInstance:   e.ReportingInstance,
		}
		if e.Series != nil {
			core.Series = &corev1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
		}
		return eventCells(core, now)
	},
}

// eventCells falls back from the old timestamps to eventTime, and from a
// count to the series' count (1 for a single event).
func eventCells(e *corev1.Event, now time.Time) []any {
	micro := func(t metav1.MicroTime) string {
		if t.IsZero() {
			return "<unknown>"
		}
		return duration.HumanDuration(now.Sub(t.Time))
	}
	first := Age(e.FirstTimestamp, now)
	if e.FirstTimestamp.IsZero() {
		first = micro(e.EventTime)
	}
	last := Age(e.LastTimestamp, now)
	if e.LastTimestamp.IsZero() {
		last = first
	}
	count := e.Count
	switch {
	case e.Series != nil:
		last, count = micro(e.Series.LastObservedTime), e.Series.Count
	case count == 0:
		count = 1
	}
	target := strings.ToLower(e.InvolvedObject.Kind)
	if e.InvolvedObject.Name != "" {
		target += "/" + e.InvolvedObject.Name
	}
	firstOf := func(a, b string) string {
		if a != "" {
			return a
		}
		return b
	}
	source := firstOf(e.Source.Component, e.ReportingController)
	if host := firstOf(e.Source.Host, e.ReportingInstance); host != "" {
		source += ", " + host
	}
	return []any{last, e.Type, e.Reason, target, e.InvolvedObject.FieldPath, source,
		strings.TrimSpace(e.Message), first, int64(count), e.Name}
}

// replicasColumns are the columns of replication controllers and replica
// sets, given the documentation of their spec and status.
func replicasColumns(specDoc, statusDoc map[string]string) []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{NameColumn,
		{Name: "Desired", Type: "integer", Description: specDoc["replicas"]},
		{Name: "Current", Type: "integer", Description: statusDoc["replicas"]},
		{Name: "Ready", Type: "integer", Description: statusDoc["readyReplicas"]},
		AgeColumn, ContainersColumn, ImagesColumn,
		{Name: "Selector", Type: "string", Priority: 1, Description: specDoc["selector"]},
	}
}

// replicas is a desired replica count, 0 when unset.
func replicas(p *int32) int64 {
	if p == nil {
		return 0
	}
	return int64(*p)
}

var replicaSetTable = &TableDef{
	Columns: replicasColumns(appsv1.ReplicaSetSpec{}.SwaggerDoc(), appsv1.ReplicaSetStatus{}.SwaggerDoc()),
	Cells: func(obj runtime.Object, now time.Time) []any {
		rs := obj.(*appsv1.ReplicaSet)
		names, images := ContainerCells(rs.Spec.Template.Spec.Containers)
		return []any{rs.Name, replicas(rs.Spec.Replicas), int64(rs.Status.Replicas), int64(rs.Status.ReadyReplicas),
			Age(rs.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(rs.Spec.Selector)}
	},
}

var statefulSetTable = &TableDef{
	Columns: []metav1.TableColumnDefinition{NameColumn,
		{Name: "Ready", Type: "string", Description: "Number of the pod with ready state"},
		AgeColumn, ContainersColumn, ImagesColumn},
	Cells: func(obj runtime.Object, now time.Time) []any {
		ss := obj.(*appsv1.StatefulSet)
		names, images := ContainerCells(ss.Spec.Template.Spec.Containers)
		return []any{ss.Name, fmt.Sprintf("%d/%d", ss.Status.ReadyReplicas, replicas(ss.Spec.Replicas)),
			Age(ss.CreationTimestamp, now), names, images}
	},
}
