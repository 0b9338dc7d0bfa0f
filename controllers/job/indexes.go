package job

import (
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// indexSet is a set of completion indexes, written in status as ordered
// intervals: "1,3-5,7".
type indexSet map[int]bool

// parseIndexes reads s, keeping the indexes below completions; what does
// not parse is skipped.
func parseIndexes(s string, completions int) indexSet {
	out := indexSet{}
	if s == "" {
		return out
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				continue
			}
		}
		for i := a; i <= b && i < completions; i++ {
			out[i] = true
		}
	}
	return out
}

func (s indexSet) has(i int) bool { return s[i] }

func (s indexSet) total() int { return len(s) }

// with returns s and ixs together.
func (s indexSet) with(ixs []int) indexSet {
	out := make(indexSet, len(s)+len(ixs))
	for i := range s {
		out[i] = true
	}
	for _, i := range ixs {
		out[i] = true
	}
	return out
}

// String writes the set as ordered intervals.
func (s indexSet) String() string {
	ixs := make([]int, 0, len(s))
	for i := range s {
		ixs = append(ixs, i)
	}
	slices.Sort(ixs)
	var b strings.Builder
	for k := 0; k < len(ixs); {
		j := k
		for j+1 < len(ixs) && ixs[j+1] == ixs[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(ixs[k]))
		if j > k {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(ixs[j]))
		}
		k = j + 1
	}
	return b.String()
}

// succeededIndexes returns the indexes in status.completedIndexes, and
// those with the indexes of the succeeded pods not yet counted added.
func succeededIndexes(job *batchv1.Job, pods []*corev1.Pod, rmPending map[types.UID]bool) (prev, now indexSet) {
	completions := int(*job.Spec.Completions)
	prev = parseIndexes(job.Status.CompletedIndexes, completions)
	var add []int
	for _, p := range pods {
		ix := completionIndex(p)
		if p.Status.Phase == corev1.PodSucceeded && ix >= 0 && ix < completions && hasFinalizer(p) && !rmPending[p.UID] {
			add = append(add, ix)
		}
	}
	return prev, prev.with(add)
}
