package explain

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// Table writes e as a node × plugin table: one row per feasible node, best
// first, each cell "raw/normalized/weighted" ("-" for a plugin skipped for
// this pod), then the rejected nodes with the plugin and reasons.
func Table(w io.Writer, e *Explanation) error {
	var b strings.Builder
	switch {
	case e.Node != "":
		fmt.Fprintf(&b, "pod %s: scheduled to %s", e.Pod, e.Node)
	default:
		fmt.Fprintf(&b, "pod %s: not scheduled", e.Pod)
	}
	fmt.Fprintf(&b, " (%d nodes, %d evaluated, %d feasible)\n", e.Nodes, e.Evaluated, e.Feasible)
	if e.Error != "" {
		fmt.Fprintf(&b, "%s\n", e.Error)
	}
	if len(e.Scores) > 0 {
		b.WriteString("\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		hdr := []string{"NODE"}
		for _, p := range e.Plugins {
			hdr = append(hdr, fmt.Sprintf("%s(%d)", p.Name, p.Weight))
		}
		hdr = append(hdr, "TOTAL")
		fmt.Fprintln(tw, strings.Join(hdr, "\t"))
		for _, s := range e.Scores {
			row := []string{s.Node}
			if s.Node == e.Node {
				row[0] += " *"
			}
			for i, p := range e.Plugins {
				switch {
				case e.ScoringSkipped || i >= len(s.Raw):
					row = append(row, "")
				case p.Skipped:
					row = append(row, "-")
				default:
					row = append(row, fmt.Sprintf("%d/%d/%d", s.Raw[i], s.Normalized[i], s.Normalized[i]*p.Weight))
				}
			}
			row = append(row, fmt.Sprint(s.Total))
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if e.MoreFeasible > 0 {
			fmt.Fprintf(&b, "... and %d more feasible nodes\n", e.MoreFeasible)
		}
		switch {
		case e.ScoringSkipped:
			b.WriteString("only one node was feasible, so none was scored\n")
		default:
			b.WriteString("cells: raw/normalized/weighted score; - = plugin skipped for this pod; * = pick\n")
		}
	}
	if len(e.Rejected) > 0 {
		b.WriteString("\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "REJECTED\tPLUGIN\tREASON")
		for _, r := range e.Rejected {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Node, r.Plugin, strings.Join(r.Reasons, ", "))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(e.RejectedCounts) > 0 {
		b.WriteString("\n")
		reasons := make([]string, 0, len(e.RejectedCounts))
		for r := range e.RejectedCounts {
			reasons = append(reasons, r)
		}
		slices.SortFunc(reasons, func(x, y string) int {
			if c := cmp.Compare(e.RejectedCounts[y], e.RejectedCounts[x]); c != 0 {
				return c
			}
			return cmp.Compare(x, y)
		})
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "REJECTED NODES\tREASON")
		for _, r := range reasons {
			fmt.Fprintf(tw, "%d\t%s\n", e.RejectedCounts[r], r)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
