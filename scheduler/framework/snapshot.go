package framework

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// HostPort is a host port a pod uses. IP is "0.0.0.0" for every address.
type HostPort struct {
	IP       string
	Protocol v1.Protocol
	Port     int32
}

// Conflicts reports whether p and o cannot both be bound on one node.
func (p HostPort) Conflicts(o HostPort) bool {
	return p.Port == o.Port && p.Protocol == o.Protocol &&
		(p.IP == o.IP || p.IP == "0.0.0.0" || o.IP == "0.0.0.0")
}

// HostPorts returns the host ports pod's containers ask for, defaulted as
// kube-scheduler does (protocol TCP, IP 0.0.0.0).
func HostPorts(pod *v1.Pod) []HostPort {
	var out []HostPort
	add := func(cs []v1.Container) {
		for i := range cs {
			for _, p := range cs[i].Ports {
				if p.HostPort <= 0 {
					continue
				}
				hp := HostPort{IP: p.HostIP, Protocol: p.Protocol, Port: p.HostPort}
				if hp.IP == "" {
					hp.IP = "0.0.0.0"
				}
				if hp.Protocol == "" {
					hp.Protocol = v1.ProtocolTCP
				}
				out = append(out, hp)
			}
		}
	}
	add(pod.Spec.InitContainers)
	add(pod.Spec.Containers)
	return out
}

// NodeInfo is a node with the pods assigned to it and their totals. The
// fields the default filters and scorers read for every node come first,
// so that they share few cache lines.
type NodeInfo struct {
	// Unschedulable, Taints and Labels are copied from Node so that the
	// filters and scorers, which read them for every node, skip a pointer
	// hop.
	Unschedulable bool
	Taints        []v1.Taint
	Allocatable   Resource
	// Requested is the sum of the pods' requests; NonZeroCPU and
	// NonZeroMemory the sums with the scoring defaults.
	Requested     Resource
	NonZeroCPU    int64
	NonZeroMemory int64
	Pods          []*PodInfo
	// images are the node's images by snapshot ImageID, sorted by ID.
	images []imageSize
	// name is Node.Name, kept for the same reason as Labels.
	name   string
	Labels map[string]string
	// Node is nil while pods are known for a node the snapshot has not seen
	// (or no longer has); such a NodeInfo is never offered to plugins.
	Node *v1.Node
	// PodsWithAffinity and PodsWithRequiredAntiAffinity are the subsets of
	// Pods with pod (anti-)affinity terms.
	PodsWithAffinity             []*PodInfo
	PodsWithRequiredAntiAffinity []*PodInfo
	UsedPorts                    []HostPort
	// Images maps every name of every image on the node to its size.
	Images map[string]int64
}

// ImageID is a snapshot's number for an image name.
type ImageID int32

type imageSize struct {
	id   ImageID
	size int64
}

// ImageSize returns the size of the image with id on the node, and whether
// the node has it. Only nodes of the snapshot that issued id know it.
func (ni *NodeInfo) ImageSize(id ImageID) (int64, bool) {
	i, ok := slices.BinarySearchFunc(ni.images, id, func(im imageSize, id ImageID) int { return int(im.id - id) })
	if !ok {
		return 0, false
	}
	return ni.images[i].size, true
}

// NewNodeInfo returns the NodeInfo of node with pods on it.
func NewNodeInfo(node *v1.Node, pods ...*v1.Pod) *NodeInfo {
	ni := &NodeInfo{}
	ni.setNode(node)
	for _, p := range pods {
		ni.addPod(NewPodInfo(p))
	}
	return ni
}

func (ni *NodeInfo) setNode(node *v1.Node) {
	ni.Node = node
	ni.Allocatable = Resource{}
	ni.Images = nil
	ni.Labels, ni.Taints, ni.Unschedulable, ni.name = nil, nil, false, ""
	if node == nil {
		return
	}
	ni.name = node.Name
	ni.Labels, ni.Taints, ni.Unschedulable = node.Labels, node.Spec.Taints, node.Spec.Unschedulable
	ni.Allocatable = ResourcesOf(node.Status.Allocatable)
	if len(node.Status.Images) > 0 {
		ni.Images = make(map[string]int64, len(node.Status.Images))
		for _, img := range node.Status.Images {
			for _, name := range img.Names {
				ni.Images[name] = img.SizeBytes
			}
		}
	}
}

// Name is the node's name, or "" for a NodeInfo without a node.
func (ni *NodeInfo) Name() string { return ni.name }

func (ni *NodeInfo) addPod(pi *PodInfo) {
	ni.Pods = append(ni.Pods, pi)
	if pi.HasAffinity() {
		ni.PodsWithAffinity = append(ni.PodsWithAffinity, pi)
	}
	if len(pi.RequiredAntiAffinity) > 0 {
		ni.PodsWithRequiredAntiAffinity = append(ni.PodsWithRequiredAntiAffinity, pi)
	}
	ni.Requested.add(&pi.Requests, 1)
	ni.NonZeroCPU += pi.NonZeroCPU
	ni.NonZeroMemory += pi.NonZeroMemory
	ni.UsedPorts = append(ni.UsedPorts, HostPorts(pi.Pod)...)
}

func (ni *NodeInfo) removePod(uid types.UID) *PodInfo {
	i := slices.IndexFunc(ni.Pods, func(p *PodInfo) bool { return p.Pod.UID == uid })
	if i < 0 {
		return nil
	}
	pi := ni.Pods[i]
	ni.Pods = slices.Delete(ni.Pods, i, i+1)
	same := func(p *PodInfo) bool { return p == pi }
	ni.PodsWithAffinity = slices.DeleteFunc(ni.PodsWithAffinity, same)
	ni.PodsWithRequiredAntiAffinity = slices.DeleteFunc(ni.PodsWithRequiredAntiAffinity, same)
	ni.Requested.add(&pi.Requests, -1)
	ni.NonZeroCPU -= pi.NonZeroCPU
	ni.NonZeroMemory -= pi.NonZeroMemory
	for _, hp := range HostPorts(pi.Pod) {
		if j := slices.Index(ni.UsedPorts, hp); j >= 0 {
			ni.UsedPorts = slices.Delete(ni.UsedPorts, j, j+1)
		}
	}
	return pi
}

// Snapshot is the scheduler's view of the cluster: nodes in a stable order
// and the pods assigned to them. It is not safe for concurrent mutation;
// the online scheduler guards it with a lock.
type Snapshot struct {
	nodes  []*NodeInfo // with a Node, in the order they were added
	byName map[string]*NodeInfo
	podAt  map[types.UID]string // pod UID -> node name
	// imageIDs numbers every image name seen; imageNodes[id] counts the
	// nodes that have the image now.
	imageIDs   map[string]ImageID
	imageNodes []int
	// affinityPods counts assigned pods with pod (anti-)affinity terms.
	affinityPods int
}

// NewSnapshot returns a snapshot of nodes and the pods assigned to them
// (pods with an empty spec.nodeName are ignored).
func NewSnapshot(nodes []*v1.Node, pods []*v1.Pod) *Snapshot {
	s := &Snapshot{
		byName:   make(map[string]*NodeInfo, len(nodes)),
		podAt:    make(map[types.UID]string, len(pods)),
		imageIDs: map[string]ImageID{},
	}
	for _, n := range nodes {
		s.SetNode(n)
	}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			s.AddPod(p)
		}
	}
	return s
}

// Nodes returns the nodes in snapshot order. The slice is the snapshot's
// own; callers must not modify it.
func (s *Snapshot) Nodes() []*NodeInfo { return s.nodes }

// NumNodes is len(Nodes()).
func (s *Snapshot) NumNodes() int { return len(s.nodes) }

// Get returns the named node, or nil.
func (s *Snapshot) Get(name string) *NodeInfo {
	if ni := s.byName[name]; ni != nil && ni.Node != nil {
		return ni
	}
	return nil
}

// ImageNodes is the number of nodes that have an image named name.
func (s *Snapshot) ImageNodes(name string) int {
	id, ok := s.imageIDs[name]
	if !ok {
		return 0
	}
	return s.imageNodes[id]
}

// ImageID returns the number of image name for NodeInfo.ImageSize, and
// whether any node of the snapshot ever had it.
func (s *Snapshot) ImageID(name string) (ImageID, bool) {
	id, ok := s.imageIDs[name]
	return id, ok
}

// HasAffinityPods reports whether any assigned pod has pod (anti-)affinity
// terms.
func (s *Snapshot) HasAffinityPods() bool { return s.affinityPods > 0 }

// SetNode adds node or replaces the node of the same name.
func (s *Snapshot) SetNode(node *v1.Node) {
	ni := s.byName[node.Name]
	if ni == nil {
		ni = &NodeInfo{}
		s.byName[node.Name] = ni
	}
	if ni.Node == nil {
		s.nodes = append(s.nodes, ni)
	}
	s.countImages(ni, -1)
	ni.setNode(node)
	s.numberImages(ni)
	s.countImages(ni, 1)
}

// RemoveNode removes the named node. Pods still assigned to it stay known
// until they are removed.
func (s *Snapshot) RemoveNode(name string) {
	ni := s.byName[name]
	if ni == nil || ni.Node == nil {
		return
	}
	s.countImages(ni, -1)
	s.nodes = slices.DeleteFunc(s.nodes, func(n *NodeInfo) bool { return n == ni })
	ni.setNode(nil)
	ni.images = nil
	if len(ni.Pods) == 0 {
		delete(s.byName, name)
	}
}

func (s *Snapshot) countImages(ni *NodeInfo, d int) {
	for _, im := range ni.images {
		s.imageNodes[im.id] += d
	}
}

// numberImages sets ni.images from ni.Images, numbering new names.
func (s *Snapshot) numberImages(ni *NodeInfo) {
	ni.images = ni.images[:0]
	for name, size := range ni.Images {
		id, ok := s.imageIDs[name]
		if !ok {
			id = ImageID(len(s.imageNodes))
			s.imageIDs[name] = id
			s.imageNodes = append(s.imageNodes, 0)
		}
		ni.images = append(ni.images, imageSize{id: id, size: size})
	}
	slices.SortFunc(ni.images, func(a, b imageSize) int { return int(a.id - b.id) })
}

// AddPod records pod on the node named by its spec.nodeName; a pod already
// known (by UID) is replaced.
func (s *Snapshot) AddPod(pod *v1.Pod) {
	s.AddPodInfo(NewPodInfo(pod))
}

// AddPodInfo is AddPod for a parsed pod.
func (s *Snapshot) AddPodInfo(pi *PodInfo) {
	s.RemovePod(pi.Pod.UID)
	name := pi.Pod.Spec.NodeName
	ni := s.byName[name]
	if ni == nil {
		ni = &NodeInfo{}
		s.byName[name] = ni
	}
	ni.addPod(pi)
	s.podAt[pi.Pod.UID] = name
	if pi.HasAffinity() {
		s.affinityPods++
	}
}

// RemovePod forgets the pod with uid, if known.
func (s *Snapshot) RemovePod(uid types.UID) {
	name, ok := s.podAt[uid]
	if !ok {
		return
	}
	delete(s.podAt, uid)
	ni := s.byName[name]
	if pi := ni.removePod(uid); pi != nil && pi.HasAffinity() {
		s.affinityPods--
	}
	if ni.Node == nil && len(ni.Pods) == 0 {
		delete(s.byName, name)
	}
}

// HasPod reports whether the pod with uid is assigned in the snapshot, and
// to which node.
func (s *Snapshot) HasPod(uid types.UID) (node string, ok bool) {
	node, ok = s.podAt[uid]
	return node, ok
}
