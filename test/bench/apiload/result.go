package main

// result is one run against one system: the JSON line apiload prints and
// -report reads.
type result struct {
	System  string `json:"system"`
	Round   int    `json:"round"`
	Attempt int    `json:"attempt,omitempty"` // 0 the first; more when a disturbed run was repeated
	Kind    string `json:"kind,omitempty"`    // "cr" when the objects were custom resources, else pods

	// Fill is the first phase, which creates the Pods pods that are then
	// listed; its count, unlike the timed phases', is the same for every
	// system.
	Fill createPhase `json:"fill"`
	Pods int         `json:"pods"` // pods in the namespace when it was listed
	// Creates are the timed create phases, one per -clients value, in order.
	Creates []createPhase `json:"creates"`

	ListJSONms      []float64        `json:"list_json_ms"` // every timed full LIST, JSON
	ListProtoms     []float64        `json:"list_proto_ms"`
	ListJSONBytes   int64            `json:"list_json_bytes"` // one JSON LIST on the wire
	ListProtoBytes  int64            `json:"list_proto_bytes"`
	ListEncoding    string           `json:"list_encoding,omitempty"` // Content-Encoding of the LIST answers (gzip when the server compressed them)
	ListJSONFirst   float64          `json:"list_json_first_ms"`      // the first full LIST, JSON: nothing of it cached by the server
	ListProtoFirst  float64          `json:"list_proto_first_ms"`
	ListJSONMedian  float64          `json:"list_json_median_ms"`
	ListProtoMedian float64          `json:"list_proto_median_ms"`
	ListJSONCPUms   float64          `json:"list_json_cpu_ms"`  // server CPU per timed JSON LIST (their mean)
	ListProtoCPUms  float64          `json:"list_proto_cpu_ms"` // server CPU per timed protobuf LIST
	RSSMiB          float64          `json:"rss_mib"`           // the servers' RSS after the pods were created and listed
	PeakRSSMiB      float64          `json:"peak_rss_mib"`      // the servers' highest RSS, at the end of the run
	Watch           watchPhase       `json:"watch"`
	StartCPUSeconds float64          `json:"start_cpu_s"` // server CPU from its start until it was ready and quiet
	CPUSeconds      float64          `json:"cpu_s"`       // server CPU during the run, every phase included
	Seconds         float64          `json:"seconds"`     // wall time of the run
	BusyPct         float64          `json:"busy_pct"`    // machine CPU busy just before the run
	StealPct        float64          `json:"steal_pct"`   // machine CPU time stolen by the hypervisor during the run
	IdlePct         float64          `json:"idle_pct"`    // machine CPU time no process used during the run
	Errors          int64            `json:"errors"`      // failed requests, every phase
	ErrorKinds      map[string]int64 `json:"error_kinds,omitempty"`
}

// createPhase is one phase of pod creation.
type createPhase struct {
	Clients    int     `json:"clients"`
	Pods       int64   `json:"pods"`    // created
	Errors     int64   `json:"errors"`  // failed creates
	Seconds    float64 `json:"seconds"` // from the first create sent to the last answer
	PerSecond  float64 `json:"per_s"`
	CPUusPerOp float64 `json:"cpu_us_per_pod"` // server CPU per created pod
}

// watchPhase is the watch fan-out.
type watchPhase struct {
	Watchers int     `json:"watchers"`
	Events   int     `json:"events"` // pods created (successfully) while the watchers watched
	P50ms    float64 `json:"p50_ms"` // negative: the watcher had the event before the creator had the answer
	P99ms    float64 `json:"p99_ms"`
	MaxMs    float64 `json:"max_ms"`
	Missed   int     `json:"missed"` // (watcher, pod) pairs with no ADDED event by the deadline
}
