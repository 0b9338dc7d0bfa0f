package job

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// indexSet is a set of completion indexes as ordered, disjoint, non-
// adjacent intervals, the form status.completedIndexes writes them in:
// "1,3-5,7". Its size does not grow with the indexes it holds.
type indexSet []interval

type interval struct{ first, last int }

// parseIndexes reads s, keeping the indexes below completions; what does
// not parse is skipped.
func parseIndexes(s string, completions int) indexSet {
	var out indexSet
	if s == "" {
		return out
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 || a >= completions {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				continue
			}
		}
		out = out.add(interval{a, min(b, completions-1)})
	}
	return out
}

// add returns s with iv in it, merged with what it overlaps or touches.
func (s indexSet) add(iv interval) indexSet {
	out := make(indexSet, 0, len(s)+1)
	for _, x := range s {
		switch {
		case x.last+1 < iv.first:
			out = append(out, x)
		case iv.last+1 < x.first:
			out = append(out, iv)
			iv = x
		default:
			iv = interval{min(x.first, iv.first), max(x.last, iv.last)}
		}
	}
	return append(out, iv)
}

func (s indexSet) has(i int) bool {
	k := sort.Search(len(s), func(k int) bool { return s[k].last >= i })
	return k < len(s) && s[k].first <= i
}

func (s indexSet) total() int {
	n := 0
	for _, x := range s {
		n += x.last - x.first + 1
	}
	return n
}

// with returns s and ixs together.
func (s indexSet) with(ixs []int) indexSet {
	out := slices.Clone(s)
	for _, i := range ixs {
		out = out.add(interval{i, i})
	}
	return out
}

// missing returns up to n indexes below completions that s lacks and
// skip does not hold, lowest first.
func (s indexSet) missing(completions, n int, skip map[int]bool) []int {
	var out []int
	next := 0
	gap := func(upTo int) { // the indexes from next to upTo, exclusive
		for i := next; i < upTo && len(out) < n; i++ {
			if !skip[i] {
				out = append(out, i)
			}
		}
	}
	for _, x := range s {
		if len(out) == n || next >= completions {
			return out
		}
		gap(min(x.first, completions))
		next = x.last + 1
	}
	gap(completions)
	return out
}

// String writes the set as ordered intervals.
func (s indexSet) String() string {
	var b strings.Builder
	for _, x := range s {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(x.first))
		if x.last > x.first {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(x.last))
		}
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
