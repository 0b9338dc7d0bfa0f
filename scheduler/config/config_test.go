package config

import (
	"strconv"
	"strings"
	"testing"

	"github.com/kubegate/kubegate/scheduler/plugins"
)

const head = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

func TestParseBuild(t *testing.T) {
	t.Parallel()
	c, err := Parse(strings.NewReader(head + `
percentageOfNodesToScore: 30
profiles:
- schedulerName: kubegate
  plugins:
    score:
      disabled:
      - name: ImageLocality
      enabled:
      - name: NodeResourcesFit
        weight: 5
      - name: NodePreferAvoidPods
        weight: 10000
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources:
        - {name: cpu, weight: 2}
        - {name: memory, weight: 1}
- schedulerName: second
  percentageOfNodesToScore: 100
`))
	if err != nil {
		t.Fatal(err)
	}
	profs, err := c.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(profs) != 2 || profs[0].SchedulerName != "kubegate" || profs[0].PercentageOfNodesToScore != 30 || profs[1].PercentageOfNodesToScore != 100 {
		t.Fatalf("got profiles %+v", profs)
	}
	var got []string
	for _, s := range profs[0].Scorers {
		got = append(got, s.Plugin.Name()+"="+strconv.FormatInt(s.Weight, 10))
	}
	want := "TaintToleration=3 NodeAffinity=2 NodeResourcesFit=5 PodTopologySpread=2 InterPodAffinity=2 NodeResourcesBalancedAllocation=1 NodePreferAvoidPods=10000"
	if strings.Join(got, " ") != want {
		t.Errorf("scorers:\ngot  %s\nwant %s", strings.Join(got, " "), want)
	}
	for _, s := range profs[0].Scorers {
		if fit, ok := s.Plugin.(*plugins.NodeResourcesFit); ok && fit.Strategy().Type != plugins.MostAllocated {
			t.Errorf("fit strategy %s, want MostAllocated", fit.Strategy().Type)
		}
	}
	if len(profs[1].Scorers) != 7 || len(profs[1].Filters) != 10 {
		t.Errorf("default profile: %d scorers, %d filters; want 7 and 10", len(profs[1].Scorers), len(profs[1].Filters))
	}
}

func TestValidateNamesField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"api version", "apiVersion: v1\nkind: KubeSchedulerConfiguration\n", `apiVersion "v1": want kubescheduler.config.k8s.io/v1`},
		{"percentage", head + "percentageOfNodesToScore: 120\n", "percentageOfNodesToScore 120: want 0 to 100"},
		{"unknown plugin", head + "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: Nope\n", `profiles[0].plugins.score.enabled[0].name "Nope": unknown plugin`},
		{"zero weight", head + "profiles:\n- plugins:\n    score:\n      enabled:\n      - {name: ImageLocality, weight: 0}\n", "profiles[0].plugins.score.enabled[0].weight 0: want at least 1"},
		{"duplicate name", head + "profiles:\n- schedulerName: a\n- schedulerName: a\n", `profiles[1].schedulerName "a": used by an earlier profile`},
		{"strategy type", head + "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy: {type: Fancy}\n", `profiles[0].pluginConfig[0].args.scoringStrategy.type "Fancy": want LeastAllocated, MostAllocated or RequestedToCapacityRatio`},
		{"shape", head + "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: RequestedToCapacityRatio\n        requestedToCapacityRatio:\n          shape: [{utilization: 0, score: 11}]\n", "profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio.shape[0].score 11: want 0 to 10"},
		{"unknown field", head + "profilez: []\n", "parse scheduler configuration"},
		{"empty", "", "empty scheduler configuration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}
