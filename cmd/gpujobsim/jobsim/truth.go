package jobsim

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Truth is the ground truth of a run: what was injected, where and when, in the clocks the
// ranks reported (skew included), so results can be matched against it.
type Truth struct {
	JobID      string           `json:"job_id"`
	WorldSize  int              `json:"world_size"`
	EpochNs    int64            `json:"epoch_ns"`
	DurationNs int64            `json:"duration_ns"`
	Ranks      []TruthRank      `json:"ranks"`
	Injections []TruthInjection `json:"injections"`
	// NCCLAccounting tells that the job reports NCCL's own memory accounting
	// (Config.NCCLStats), which the evidence mode's expectations depend on.
	NCCLAccounting bool `json:"nccl_accounting,omitempty"`
}

// TruthRank is one rank's placement and reporting behaviour.
type TruthRank struct {
	Rank        int    `json:"rank"`
	Host        string `json:"host"`
	GPU         int    `json:"gpu"`
	UUID        string `json:"uuid"`
	ClockSkewNs int64  `json:"clock_skew_ns"`
	StartNs     int64  `json:"start_offset_ns"`
	Missing     bool   `json:"missing"`
}

// TruthInjection is one injected event.
type TruthInjection struct {
	ID             int               `json:"id"`
	Kind           string            `json:"kind"`
	Step           int               `json:"step"`
	Collective     string            `json:"collective,omitempty"`
	Ranks          []int             `json:"ranks"`
	StartNs        int64             `json:"start_ns"` // job clock (no skew)
	EndNs          int64             `json:"end_ns"`
	PeakBytes      int64             `json:"peak_bytes"`
	PermanentBytes int64             `json:"permanent_bytes,omitempty"`
	Expected       string            `json:"expected_classification"`
	Note           string            `json:"note"`
	PerRank        []TruthRankWindow `json:"per_rank"`
}

// TruthRankWindow is when one rank's hidden memory was raised, in that rank's clock.
type TruthRankWindow struct {
	Rank    int   `json:"rank"`
	StartNs int64 `json:"start_ns"`
	EndNs   int64 `json:"end_ns"`
	Bytes   int64 `json:"bytes"`
}

// Truth returns the ground truth for a run that started at epoch.
func (s *Scenario) Truth(epoch time.Time) Truth {
	t := Truth{JobID: s.Config.JobID, WorldSize: s.Config.Ranks, EpochNs: epoch.UnixNano(), DurationNs: int64(s.Config.Duration),
		NCCLAccounting: s.Config.NCCLStats}
	for _, rk := range s.Ranks {
		t.Ranks = append(t.Ranks, TruthRank{Rank: rk.Rank, Host: rk.Host, GPU: rk.GPU, UUID: rk.UUID,
			ClockSkewNs: int64(rk.ClockSkew), StartNs: int64(rk.Start), Missing: rk.Missing})
	}
	for _, in := range s.Injections {
		ti := TruthInjection{ID: in.ID, Kind: in.Kind, Step: in.Step, Collective: in.Collective, Ranks: append([]int{}, in.Ranks...),
			StartNs: epoch.Add(in.Start).UnixNano(), EndNs: epoch.Add(in.End).UnixNano(), PeakBytes: in.PeakBytes,
			PermanentBytes: in.PermanentBytes, Expected: in.Expected, Note: in.Note}
		for _, r := range in.Ranks {
			sp := in.perRank[r]
			ti.PerRank = append(ti.PerRank, TruthRankWindow{Rank: r, StartNs: s.UnixNano(epoch, r, sp.start), EndNs: s.UnixNano(epoch, r, sp.end), Bytes: sp.size})
		}
		t.Injections = append(t.Injections, ti)
	}
	return t
}

// WriteTable prints the ground truth for people.
func (t Truth) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Ground truth: job %s, world size %d\n", t.JobID, t.WorldSize)
	var missing, late, skews []string
	for _, r := range t.Ranks {
		switch {
		case r.Missing:
			missing = append(missing, fmt.Sprint(r.Rank))
		case r.StartNs > 0:
			late = append(late, fmt.Sprintf("%d (+%s)", r.Rank, time.Duration(r.StartNs)))
		}
	}
	hostSkew := map[string]int64{}
	for _, r := range t.Ranks {
		hostSkew[r.Host] = r.ClockSkewNs
	}
	hosts := make([]string, 0, len(hostSkew))
	for h := range hostSkew {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, h := range hosts {
		skews = append(skews, fmt.Sprintf("%s %+.1fms", h, float64(hostSkew[h])/1e6))
	}
	fmt.Fprintf(&b, "  clock skew: %s\n", strings.Join(skews, ", "))
	fmt.Fprintf(&b, "  late ranks: %s; missing ranks: %s\n", orNone(late), orNone(missing))
	accounting := "without NCCL's memory accounting"
	if t.NCCLAccounting {
		accounting = "with NCCL's memory accounting"
	}
	fmt.Fprintf(&b, "  injected events (\"NCCL's?\": whether NCCL allocated the memory), and what each mode is\n  expected to say of them on every rank (evidence mode %s):\n", accounting)
	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  #\tkind\tstep\tcollective\tt (s)\tranks\tpeak\tNCCL's?\treference expects\tevidence expects\tnote")
	for _, in := range t.Injections {
		fmt.Fprintf(tw, "  %d\t%s\t%d\t%s\t%.3f–%.3f\t%s\t%.2f GiB\t%s\t%s\t%s\t%s\n", in.ID, in.Kind, in.Step, dash(in.Collective),
			float64(in.StartNs-t.EpochNs)/1e9, float64(in.EndNs-t.EpochNs)/1e9, RankList(in.Ranks),
			float64(in.PeakBytes)/float64(gib), yesNo(IsCollectiveCaused(in.Kind)), ReferenceExpectation(in),
			EvidenceExpectation(in, t.NCCLAccounting, t.WorldSize), in.Note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// RankList formats sorted ranks compactly: "0-7,9".
func RankList(ranks []int) string {
	if len(ranks) == 0 {
		return "-"
	}
	var parts []string
	for i := 0; i < len(ranks); {
		j := i
		for j+1 < len(ranks) && ranks[j+1] == ranks[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, fmt.Sprint(ranks[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", ranks[i], ranks[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
