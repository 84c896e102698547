package demo

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Sample is one line of the Prometheus text format.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Metrics are the samples of one scrape.
type Metrics []Sample

// ParseMetrics reads the Prometheus text exposition format (version
// 0.0.4): comments and blank lines are skipped; a sample is
// name{label="value",...} value [timestamp].
func ParseMetrics(r io.Reader) (Metrics, error) {
	var out Metrics
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			return nil, fmt.Errorf("metrics line %d: %w", n, err)
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

func parseSample(line string) (Sample, error) {
	s := Sample{Labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		return s, fmt.Errorf("no value in %q", line)
	}
	s.Name = line[:i]
	rest := line[i:]
	if rest[0] == '{' {
		j := 1
		for {
			for j < len(rest) && (rest[j] == ' ' || rest[j] == ',') {
				j++
			}
			if j >= len(rest) {
				return s, fmt.Errorf("unterminated labels in %q", line)
			}
			if rest[j] == '}' {
				j++
				break
			}
			eq := strings.IndexByte(rest[j:], '=')
			if eq < 0 || j+eq+1 >= len(rest) || rest[j+eq+1] != '"' {
				return s, fmt.Errorf("bad label in %q", line)
			}
			key := rest[j : j+eq]
			j += eq + 2
			var val strings.Builder
			for ; j < len(rest) && rest[j] != '"'; j++ {
				c := rest[j]
				if c == '\\' && j+1 < len(rest) {
					j++
					switch rest[j] {
					case 'n':
						c = '\n'
					default:
						c = rest[j]
					}
				}
				val.WriteByte(c)
			}
			if j >= len(rest) {
				return s, fmt.Errorf("unterminated label value in %q", line)
			}
			j++ // closing quote
			s.Labels[key] = val.String()
		}
		rest = rest[j:]
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return s, fmt.Errorf("no value in %q", line)
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, fmt.Errorf("bad value in %q: %w", line, err)
	}
	s.Value = v
	return s, nil
}

// matches reports whether s has every label of match.
func (s Sample) matches(match map[string]string) bool {
	for k, v := range match {
		if s.Labels[k] != v {
			return false
		}
	}
	return true
}

// Sum adds up the samples named name that carry every label of match.
func (m Metrics) Sum(name string, match map[string]string) float64 {
	var t float64
	for _, s := range m {
		if s.Name == name && s.matches(match) {
			t += s.Value
		}
	}
	return t
}

// ByLabel returns, for the samples named name, the value of each distinct
// value of label (values of equal label summed).
func (m Metrics) ByLabel(name, label string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range m {
		if s.Name == name {
			out[s.Labels[label]] += s.Value
		}
	}
	return out
}

// Quantile estimates the q-quantile (0 < q < 1) of the histogram whose
// bucket samples are named name+"_bucket", merging every series (the
// buckets of equal "le" are added). Like Prometheus's histogram_quantile,
// it interpolates linearly inside the bucket holding the rank; a rank in
// the +Inf bucket returns the largest finite bound. ok is false when the
// histogram has no observations.
func (m Metrics) Quantile(name string, q float64) (v float64, ok bool) {
	counts := map[float64]float64{}
	for _, s := range m {
		if s.Name != name+"_bucket" {
			continue
		}
		le, err := strconv.ParseFloat(s.Labels["le"], 64)
		if err != nil {
			continue
		}
		counts[le] += s.Value
	}
	return bucketQuantile(q, counts)
}

// bucketQuantile computes the quantile from cumulative bucket counts by
// upper bound (+Inf included).
func bucketQuantile(q float64, counts map[float64]float64) (float64, bool) {
	if len(counts) == 0 || q <= 0 || q >= 1 {
		return 0, false
	}
	bounds := make([]float64, 0, len(counts))
	for b := range counts {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	total := counts[bounds[len(bounds)-1]]
	if !math.IsInf(bounds[len(bounds)-1], 1) || total <= 0 {
		return 0, false
	}
	rank := q * total
	prevBound, prevCount := 0.0, 0.0
	for i, b := range bounds {
		c := counts[b]
		if c >= rank {
			if math.IsInf(b, 1) {
				if i == 0 {
					return 0, false
				}
				return bounds[i-1], true
			}
			if c == prevCount {
				return b, true
			}
			return prevBound + (b-prevBound)*(rank-prevCount)/(c-prevCount), true
		}
		prevBound, prevCount = b, c
	}
	return 0, false
}
