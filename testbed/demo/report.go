package demo

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// NodeCounts are one node's server-side counters (cumulative, or the
// difference over one run after Diff).
type NodeCounts struct {
	Name string
	// Received: bulk items the node received from clients (emulator only;
	// -1 when the server does not count them).
	Received int64
	// Forwarded: items the node, as coordinator, forwarded to the node
	// holding their primary (emulator only; -1 when unknown).
	Forwarded int64
	// Primary: items written on this node as primary (emulator), or
	// index operations on this node, primaries and replicas (real
	// OpenSearch, indices.indexing.index_total). The "written" column.
	Primary int64
	// TransportTxBytes: bytes the node sent to other nodes (both backends:
	// forwards and replication).
	TransportTxBytes int64
}

// Diff returns after − before per node (matched by name; nodes missing
// from before count from zero). Unknown counters (-1) stay unknown.
func Diff(before, after []NodeCounts) []NodeCounts {
	prev := map[string]NodeCounts{}
	for _, n := range before {
		prev[n.Name] = n
	}
	out := make([]NodeCounts, len(after))
	for i, a := range after {
		b := prev[a.Name]
		out[i] = NodeCounts{
			Name:             a.Name,
			Received:         sub(a.Received, b.Received),
			Forwarded:        sub(a.Forwarded, b.Forwarded),
			Primary:          a.Primary - b.Primary,
			TransportTxBytes: a.TransportTxBytes - b.TransportTxBytes,
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func sub(a, b int64) int64 {
	if a < 0 {
		return -1
	}
	return a - b
}

// Run is the outcome of one load run.
type Run struct {
	Label   string
	Routing bool

	LogsSent, SpansSent int64 // records the collector accepted over OTLP (warm-up included)
	// Measured is the records of the measured load (warm-up excluded):
	// the server counters, bytes per document and the rate cover these.
	Measured                int64
	LogsStored, SpansStored int64 // documents found in the cluster afterwards
	// Conflicts are creates answered 409 because an earlier attempt had
	// stored the document (the exporter's duplicate outcome): duplicates
	// prevented, not stored.
	Conflicts int64
	// Retried and Failed are documents handed back to the collector for a
	// later retry, and documents dropped as permanently failed.
	Retried, Failed int64

	// Direct and Unrouted are the exporter's documents.routed counts:
	// sent straight to the primary's node, or not, by reason (warm-up
	// included).
	Direct   int64
	Unrouted map[string]int64

	Nodes   []NodeCounts     // per node, over this run
	Windows map[string]int64 // the exporter's congestion window per node at the end
	// P50 and P99 of per-node bulk request latency (seconds), from the
	// collector's otelcol.opensearchrouted.bulk_request.duration histogram.
	P50, P99   float64
	HasLatency bool
	Elapsed    time.Duration
}

// Sent is every record accepted by the collector.
func (r Run) Sent() int64 { return r.LogsSent + r.SpansSent }

// Stored is every document found in the cluster.
func (r Run) Stored() int64 { return r.LogsStored + r.SpansStored }

// DuplicatesStored is how many more documents were stored than records
// sent (every record the load generator sends is distinct).
func (r Run) DuplicatesStored() int64 {
	d := (r.LogsStored - r.LogsSent)
	if d < 0 {
		d = 0
	}
	if s := r.SpansStored - r.SpansSent; s > 0 {
		d += s
	}
	return d
}

// Missing is how many records were accepted but not stored.
func (r Run) Missing() int64 {
	m := r.LogsSent - r.LogsStored
	if m < 0 {
		m = 0
	}
	if s := r.SpansSent - r.SpansStored; s > 0 {
		m += s
	}
	return m
}

// Forwarded is the items forwarded between nodes (-1 if unknown).
func (r Run) Forwarded() int64 {
	return total(r.Nodes, func(n NodeCounts) int64 { return n.Forwarded })
}

// Received is the items the nodes received from the collector (-1 if unknown).
func (r Run) Received() int64 { return total(r.Nodes, func(n NodeCounts) int64 { return n.Received }) }

// TransportBytes is every byte sent between nodes.
func (r Run) TransportBytes() int64 {
	return total(r.Nodes, func(n NodeCounts) int64 { return n.TransportTxBytes })
}

func total(ns []NodeCounts, f func(NodeCounts) int64) int64 {
	var t int64
	for _, n := range ns {
		v := f(n)
		if v < 0 {
			return -1
		}
		t += v
	}
	return t
}

func (r Run) unrouted() int64 {
	var un int64
	for _, n := range r.Unrouted {
		un += n
	}
	return un
}

// Resent is how many more sends the exporter counted than records sent:
// the attempts after the first of retried records.
func (r Run) Resent() int64 {
	return max(0, r.Direct+r.unrouted()-r.Sent())
}

// Ok reports whether every accepted record is stored exactly once.
func (r Run) Ok() bool { return r.Missing() == 0 && r.DuplicatesStored() == 0 && r.Sent() > 0 }

// FromMetrics fills the collector-side fields of r from one scrape of the
// collector's Prometheus endpoint.
func (r *Run) FromMetrics(m Metrics) {
	const docs = "otelcol_opensearchrouted_documents"
	r.Conflicts = int64(m.Sum(docs, map[string]string{"outcome": "duplicate"}))
	r.Retried = int64(m.Sum(docs, map[string]string{"outcome": "retried"}))
	r.Failed = int64(m.Sum(docs, map[string]string{"outcome": "failed"}))
	const routed = "otelcol_opensearchrouted_documents_routed"
	r.Direct = int64(m.Sum(routed, map[string]string{"path": "direct"}))
	r.Unrouted = map[string]int64{}
	for _, s := range m {
		if s.Name == routed && s.Labels["path"] == "unrouted" && s.Value > 0 {
			r.Unrouted[s.Labels["reason"]] += int64(s.Value)
		}
	}
	r.Windows = map[string]int64{}
	// The logs and the traces exporter each report a window per node: show
	// the larger.
	for _, s := range m {
		if s.Name == "otelcol_opensearchrouted_node_window" {
			if v := int64(s.Value); v > r.Windows[s.Labels["node"]] {
				r.Windows[s.Labels["node"]] = v
			}
		}
	}
	const dur = "otelcol_opensearchrouted_bulk_request_duration"
	p50, ok50 := m.Quantile(dur, 0.50)
	p99, ok99 := m.Quantile(dur, 0.99)
	r.P50, r.P99, r.HasLatency = p50, p99, ok50 && ok99
}

// Format writes the runs side by side, one column per run, readable in
// ten seconds: what was sent and stored, what crossed between nodes, how
// the load spread over the nodes, the windows, latency and time.
func Format(w io.Writer, title string, runs ...Run) error {
	var b strings.Builder
	b.WriteString(title)
	b.WriteString("\n\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 3, ' ', 0)
	row := func(name string, f func(Run) string) {
		cells := []string{name}
		for _, r := range runs {
			cells = append(cells, f(r))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	row("", func(r Run) string { return r.Label })
	row("records sent (logs + spans)", func(r Run) string {
		return fmt.Sprintf("%d (%d + %d)", r.Sent(), r.LogsSent, r.SpansSent)
	})
	row("stored", func(r Run) string {
		s := fmt.Sprintf("%d", r.Stored())
		if m := r.Missing(); m > 0 {
			s += fmt.Sprintf(" (%d MISSING)", m)
		}
		return s
	})
	row("duplicates stored", func(r Run) string { return fmt.Sprintf("%d", r.DuplicatesStored()) })
	row("  retries absorbed as 409", func(r Run) string { return fmt.Sprintf("%d", r.Conflicts) })
	row("sent to the primary's node", func(r Run) string {
		return fmt.Sprintf("%d (%s)", r.Direct, pct(r.Direct, r.Direct+r.unrouted()))
	})
	row("  unrouted, by reason", func(r Run) string {
		reasons := make([]string, 0, len(r.Unrouted))
		for k := range r.Unrouted {
			reasons = append(reasons, k)
		}
		sort.Strings(reasons)
		parts := make([]string, len(reasons))
		for i, k := range reasons {
			parts[i] = fmt.Sprintf("%s %d", k, r.Unrouted[k])
		}
		if len(parts) == 0 {
			return "0"
		}
		return strings.Join(parts, ", ")
	})
	if anyRun(runs, func(r Run) bool { return r.Resent() > 0 }) {
		// documents_routed counts every attempt: a retried record is in the
		// two rows above once per attempt.
		row("  of these, sent again (retries)", func(r Run) string { return fmt.Sprintf("%d", r.Resent()) })
	}
	if anyRun(runs, func(r Run) bool { return r.Forwarded() >= 0 }) {
		row("items forwarded node→node", func(r Run) string {
			f, recv := r.Forwarded(), r.Received()
			if f < 0 {
				return "n/a"
			}
			return fmt.Sprintf("%d (%s of received)", f, pct(f, recv))
		})
	}
	row("transport bytes node→node", func(r Run) string {
		tb := r.TransportBytes()
		if r.Measured <= 0 {
			return fmtBytes(tb)
		}
		return fmt.Sprintf("%s (%.0f B/doc)", fmtBytes(tb), float64(tb)/float64(r.Measured))
	})
	for _, name := range nodeNames(runs) {
		row("  "+name+" received / written", func(r Run) string {
			for _, n := range r.Nodes {
				if n.Name == name {
					if n.Received < 0 {
						return fmt.Sprintf("- / %d", n.Primary)
					}
					return fmt.Sprintf("%d / %d", n.Received, n.Primary)
				}
			}
			return "-"
		})
	}
	row("windows at the end (per node)", func(r Run) string {
		names := make([]string, 0, len(r.Windows))
		for n := range r.Windows {
			names = append(names, n)
		}
		sort.Strings(names)
		parts := make([]string, len(names))
		for i, n := range names {
			parts[i] = fmt.Sprintf("%d", r.Windows[n])
		}
		if len(parts) == 0 {
			return "-"
		}
		return strings.Join(parts, " / ")
	})
	row("bulk request p50 / p99", func(r Run) string {
		if !r.HasLatency {
			return "-"
		}
		return fmtSeconds(r.P50) + " / " + fmtSeconds(r.P99)
	})
	row("retried / failed documents", func(r Run) string { return fmt.Sprintf("%d / %d", r.Retried, r.Failed) })
	row("wall time", func(r Run) string {
		s := r.Elapsed.Round(10 * time.Millisecond).String()
		if r.Elapsed > 0 && r.Measured > 0 {
			s += fmt.Sprintf(" (%.0f rec/s)", float64(r.Measured)/r.Elapsed.Seconds())
		}
		return s
	})
	row("exactly once", func(r Run) string {
		if r.Ok() {
			return "yes"
		}
		return "NO"
	})
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(runs) == 2 {
		b.WriteString("\n")
		b.WriteString(Verdict(runs[0], runs[1]))
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Verdict is one sentence comparing a routed run with a round-robin run.
func Verdict(routed, rr Run) string {
	var parts []string
	if f1, f2 := routed.Forwarded(), rr.Forwarded(); f1 >= 0 && f2 > 0 {
		parts = append(parts, fmt.Sprintf("routing removed %s of the node-to-node forwards (%d → %d items)", pct(f2-f1, f2), f2, f1))
	}
	if t1, t2 := routed.TransportBytes(), rr.TransportBytes(); t2 > 0 {
		parts = append(parts, fmt.Sprintf("transport bytes %s → %s (%+.0f%%)", fmtBytes(t2), fmtBytes(t1), 100*float64(t1-t2)/float64(t2)))
	}
	if routed.HasLatency && rr.HasLatency && rr.P99 > 0 {
		parts = append(parts, fmt.Sprintf("bulk p99 %s → %s", fmtSeconds(rr.P99), fmtSeconds(routed.P99)))
	}
	if len(parts) == 0 {
		return "no comparison available"
	}
	return strings.Join(parts, "; ") + "."
}

func anyRun(runs []Run, f func(Run) bool) bool {
	for _, r := range runs {
		if f(r) {
			return true
		}
	}
	return false
}

func nodeNames(runs []Run) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range runs {
		for _, n := range r.Nodes {
			if !seen[n.Name] {
				seen[n.Name] = true
				out = append(out, n.Name)
			}
		}
	}
	sort.Strings(out)
	return out
}

func pct(part, whole int64) string {
	if whole <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(part)/float64(whole))
}

func fmtSeconds(s float64) string {
	switch {
	case s < 0.001:
		return fmt.Sprintf("%.0fµs", s*1e6)
	case s < 1:
		return fmt.Sprintf("%.1fms", s*1e3)
	default:
		return fmt.Sprintf("%.2fs", s)
	}
}

func fmtBytes(b int64) string {
	switch {
	case b < 0:
		return "n/a"
	case b < 10<<10:
		return fmt.Sprintf("%d B", b)
	case b < 10<<20:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	default:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
}
