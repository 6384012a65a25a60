package main

// Bench mode: the simulate mode's batch (the same world and the same scheduling loop, each pod
// assumed and reserved before the next), timed from the first pod's cycle to the last's: the
// load (decoding, the informers' sync, the cache) is not timed, nor the summary. The framework
// runs with parallelism 1, as in every mode of the oracle (deterministic), where kube-scheduler
// runs its Filter and Score over the nodes with 16 workers by default; and each cycle also
// builds the oracle's per-node decision (sorted node names, per-plugin scores), which
// kube-scheduler does not.

import (
	"time"
)

type benchDoc struct {
	Pods        int     `json:"pods"`
	Seconds     float64 `json:"seconds"`
	PodsPerS    float64 `json:"pods_per_s"`
	Scheduled   int     `json:"scheduled"`
	Parallelism int     `json:"parallelism"`
	Percentage  *int32  `json:"percentage_of_nodes_to_score"`
	Note        string  `json:"note"`
}

func bench(sc scenario) (*benchDoc, error) {
	s, err := prepareSimulation(sc)
	if err != nil {
		return nil, err
	}
	defer s.w.close()
	start := time.Now()
	doc, err := s.place()
	seconds := time.Since(start).Seconds()
	if err != nil {
		return nil, err
	}
	out := &benchDoc{Pods: doc.Summary.Pods, Seconds: seconds, Scheduled: doc.Summary.Scheduled, Parallelism: 1,
		Percentage: sc.Percentage,
		Note: "kube-scheduler's framework at parallelism 1 (deterministic; kube-scheduler defaults to 16 workers); " +
			"the load is not timed"}
	if seconds > 0 {
		out.PodsPerS = float64(doc.Summary.Pods) / seconds
	}
	return out, nil
}
