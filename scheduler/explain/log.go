package explain

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/kubegate/kubegate/scheduler/framework"
)

// LogLines writes the attempt as kube-scheduler logs it at verbosity v, in
// klog's text format (Lmmdd hh:mm:ss.uuuuuu, then "message" key=value ...):
//
//	v>=2: "Successfully bound pod to node" or "Unable to schedule pod; no fit; waiting"
//	v>=5: "Node failed filter" per rejected node (with plugin and reasons)
//	v>=10: "Plugin scored node for pod" per node and plugin (the normalised,
//	       weighted score, as kube-scheduler prints it) and "Calculated
//	       node's final score for pod" per node
func LogLines(w io.Writer, now time.Time, v int, res *framework.Result, err error) error {
	var b strings.Builder
	line := func(sev byte, msg string, kv ...any) {
		fmt.Fprintf(&b, "%c%s %7d scheduler] %q", sev, now.UTC().Format("0102 15:04:05.000000"), 1, msg)
		for i := 0; i+1 < len(kv); i += 2 {
			fmt.Fprintf(&b, " %s=%s", kv[i], value(kv[i+1]))
		}
		b.WriteByte('\n')
	}
	if v >= 10 {
		for _, s := range res.Scores {
			for i, p := range res.Plugins {
				if res.ScoringSkipped || p.Skipped {
					continue
				}
				line('I', "Plugin scored node for pod", "pod", res.Pod, "plugin", p.Name, "node", s.Node, "score", s.Normalized[i]*p.Weight)
			}
		}
		for _, s := range res.Scores {
			line('I', "Calculated node's final score for pod", "pod", res.Pod, "node", s.Node, "score", s.Total)
		}
	}
	if v >= 5 {
		for _, r := range res.Rejected {
			line('I', "Node failed filter", "pod", res.Pod, "node", r.Node, "plugin", r.Plugin, "reasons", strings.Join(r.Reasons, ", "))
		}
	}
	if v >= 2 {
		switch {
		case err != nil:
			line('I', "Unable to schedule pod; no fit; waiting", "pod", res.Pod, "err", err.Error())
		default:
			line('I', "Successfully bound pod to node", "pod", res.Pod, "node", res.SelectedNode, "evaluatedNodes", res.EvaluatedNodes, "feasibleNodes", res.FeasibleNodes)
		}
	}
	_, werr := io.WriteString(w, b.String())
	return werr
}

func value(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	default:
		return fmt.Sprint(x)
	}
}
