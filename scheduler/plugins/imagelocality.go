package plugins

import (
	"context"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/kubegate/kubegate/scheduler/framework"
)

// ImageLocality thresholds: below minImageThreshold of image bytes a node
// scores 0; at maxContainerImageThreshold per container it scores 100.
const (
	mib                        = 1024 * 1024
	minImageThreshold          = 23 * mib
	maxContainerImageThreshold = 1000 * mib
)

// ImageLocality favours nodes that already have the pod's images: the
// bytes present, each image's size scaled by the fraction of all nodes that
// have it (so an image everywhere counts fully and a rare one little),
// clamped to [23 MiB, 1000 MiB × containers] and mapped linearly to 0..100.
type ImageLocality struct{}

var (
	_ framework.PreScorePlugin = ImageLocality{}
	_ framework.ScorePlugin    = ImageLocality{}

	_ framework.BatchScorePlugin = ImageLocality{}
)

const imageLocalityKey = "PreScore" + NameImageLocality

// Name implements framework.Plugin.
func (ImageLocality) Name() string { return NameImageLocality }

// podImage is one of the pod's images, normalised, with the fraction of
// all nodes that have it and its snapshot number (known is false when no
// node has ever had it).
type podImage struct {
	name   string
	spread float64
	id     framework.ImageID
	known  bool
}

// PreScore implements framework.PreScorePlugin: it normalises the pod's
// image names and looks up their spread once.
func (ImageLocality) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	state.Write(imageLocalityKey, podImages(state.Snapshot, pod))
	return nil
}

func podImages(snap *framework.Snapshot, pod *v1.Pod) []podImage {
	out := make([]podImage, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	add := func(image string) {
		name := normalizedImageName(image)
		id, known := snap.ImageID(name)
		out = append(out, podImage{name: name, spread: float64(snap.ImageNodes(name)) / float64(snap.NumNodes()), id: id, known: known})
	}
	for i := range pod.Spec.InitContainers {
		add(pod.Spec.InitContainers[i].Image)
	}
	for i := range pod.Spec.Containers {
		add(pod.Spec.Containers[i].Image)
	}
	return out
}

// Score implements framework.ScorePlugin.
func (ImageLocality) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) (int64, *framework.Status) {
	return imageLocalityScore(preScoredImages(state, pod), node), nil
}

// ScoreNodes implements framework.BatchScorePlugin.
func (ImageLocality) ScoreNodes(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo, scores []int64) *framework.Status {
	images := preScoredImages(state, pod)
	for i, node := range nodes {
		scores[i] = imageLocalityScore(images, node)
	}
	return nil
}

func preScoredImages(state *framework.CycleState, pod *v1.Pod) []podImage {
	if images, ok := state.Read(imageLocalityKey).([]podImage); ok {
		return images
	}
	return podImages(state.Snapshot, pod)
}

func imageLocalityScore(images []podImage, node *framework.NodeInfo) int64 {
	var sum int64
	for _, img := range images {
		if !img.known {
			continue
		}
		if size, ok := node.ImageSize(img.id); ok {
			sum += int64(float64(size) * img.spread)
		}
	}
	return imageScore(sum, len(images))
}

func imageScore(sum int64, containers int) int64 {
	hi := int64(maxContainerImageThreshold) * int64(containers)
	sum = min(max(sum, minImageThreshold), hi)
	if hi <= minImageThreshold {
		return 0
	}
	return framework.MaxNodeScore * (sum - minImageThreshold) / (hi - minImageThreshold)
}

// normalizedImageName adds ":latest" to an image without a tag or digest.
func normalizedImageName(name string) string {
	if strings.LastIndex(name, ":") <= strings.LastIndex(name, "/") {
		return name + ":latest"
	}
	return name
}
