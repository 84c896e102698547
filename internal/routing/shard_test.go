package routing

import (
	"bufio"
	"encoding/json"
	"errors"
	"math"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/opensearch-project/opensearch-go/v4/opensearchutil/shardhash"
	"github.com/twmb/murmur3"
)

// Vector is one row of testdata/routing_vectors.tsv (a copy of
// shared/spec/routing_vectors.tsv, produced by Lucene's murmur3 and
// OpenSearch's formula).
type vector struct {
	ID, Routing string
	N, R, P     int
	Hash        int32
	Shard       int
}

func loadVectors(t testing.TB) []vector {
	t.Helper()
	f, err := os.Open("testdata/routing_vectors.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []vector
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) != 7 {
			t.Fatalf("bad row %q", sc.Text())
		}
		atoi := func(s string) int {
			v, err := strconv.Atoi(s)
			if err != nil {
				t.Fatalf("row %q: %v", sc.Text(), err)
			}
			return v
		}
		out = append(out, vector{cols[0], cols[1], atoi(cols[2]), atoi(cols[3]), atoi(cols[4]), int32(atoi(cols[5])), atoi(cols[6])})
	}
	if len(out) != 42 {
		t.Fatalf("want 42 vectors, got %d", len(out))
	}
	return out
}

func TestVectors(t *testing.T) {
	for _, v := range loadVectors(t) {
		eff := v.ID
		if v.Routing != "" {
			eff = v.Routing
		}
		if got := Hash(eff); got != v.Hash {
			t.Errorf("Hash(%q) = %d, want %d", eff, got, v.Hash)
		}
		got, err := ShardFor(v.ID, v.Routing, v.N, v.R, v.P)
		if err != nil {
			t.Errorf("ShardFor(%q, %q, %d, %d, %d): %v", v.ID, v.Routing, v.N, v.R, v.P, err)
			continue
		}
		if got != v.Shard {
			t.Errorf("ShardFor(%q, %q, %d, %d, %d) = %d, want %d", v.ID, v.Routing, v.N, v.R, v.P, got, v.Shard)
		}
	}
}

func TestKnownHashes(t *testing.T) {
	for s, want := range map[string]int32{
		"hello": -675079799,
		"hell":  1510782915,
		"The quick brown fox jumps over the lazy dog": -528633700,
		"": 0,
	} {
		if got := Hash(s); got != want {
			t.Errorf("Hash(%q) = %d, want %d", s, got, want)
		}
	}
	// Over UTF-8 bytes "hello" would hash to 613153351: make sure we do not.
	if Hash("hello") == 613153351 {
		t.Fatal("hashing UTF-8 bytes instead of UTF-16LE")
	}
}

func TestDefaultRoutingShards(t *testing.T) {
	for n, want := range map[int]int{1: 1024, 2: 1024, 3: 768, 4: 1024, 5: 640, 8: 1024, 9: 576, 30: 960, 512: 1024, 1024: 2048} {
		if got := DefaultRoutingShards(n); got != want {
			t.Errorf("DefaultRoutingShards(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestInvalidLayouts(t *testing.T) {
	cases := []struct {
		n, r, p int
		want    string
	}{
		{0, 0, 1, "number_of_shards must be ≥ 1, got 0"},
		{3, 10, 1, "routing_num_shards 10 must be a multiple of number_of_shards 3"},
		{4, 2, 1, "routing_num_shards 2 must be a multiple of number_of_shards 4"},
		{4, 8, 8, "routing_partition_size 8 must be 1 or less than routing_num_shards 8"},
		{4, 8, 9, "routing_partition_size 9 must be 1 or less than routing_num_shards 8"},
		{4, 8, -1, "routing_partition_size must be ≥ 1, got -1"},
	}
	for _, c := range cases {
		_, err := ShardFor("x", "y", c.n, c.r, c.p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ShardFor(N=%d, R=%d, p=%d): err = %v, want it to name %q", c.n, c.r, c.p, err, c.want)
		}
	}
	_, err := ShardFor("x", "", 4, 8, 3)
	var rr ErrRoutingRequired
	if !errors.As(err, &rr) || rr.PartitionSize != 3 || !strings.Contains(err.Error(), "routing_partition_size 3") {
		t.Errorf("p > 1 without routing: err = %v", err)
	}
	// R = 0 defaults; p = 0 means 1.
	l, err := NewLayout(5, 0, 0)
	if err != nil || l != (Layout{5, 640, 1}) {
		t.Errorf("NewLayout(5, 0, 0) = %+v, %v", l, err)
	}
}

// TestInvalidUTF8 pins the decision documented on Hash: invalid bytes are
// hashed as U+FFFD, which is what the encoder (via SanitizeUTF8, or
// encoding/json) sends and therefore what the server hashes.
func TestInvalidUTF8(t *testing.T) {
	for _, s := range []string{"a\xffb", "\xed\xa0\x80", "ok\xc3", "\xe6\x97", "\x80\x80é"} {
		clean := SanitizeUTF8(s)
		if Hash(s) != Hash(clean) {
			t.Errorf("Hash(%q) != Hash(SanitizeUTF8) (%q)", s, clean)
		}
		// encoding/json agrees on what the server decodes.
		enc, _ := json.Marshal(s)
		var dec string
		if err := json.Unmarshal(enc, &dec); err != nil {
			t.Fatal(err)
		}
		if dec != clean {
			t.Errorf("SanitizeUTF8(%q) = %q, encoding/json round trip gives %q", s, clean, dec)
		}
		if Hash(s) != refHash(dec) {
			t.Errorf("Hash(%q) = %d, reference over the decoded string = %d", s, Hash(s), refHash(dec))
		}
	}
	if s := "valid é"; SanitizeUTF8(s) != s {
		t.Error("SanitizeUTF8 changed a valid string")
	}
}

func randomID(r *rand.Rand) string {
	alphabets := [][]rune{
		[]rune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"),
		[]rune("éèàüßøåñç€£¥"),
		[]rune("日本語中文한국어ﾊﾝｶｸｆｕｌｌ"),
		{0x1D11E, 0x1F600, 0x10000, 0x10FFFF, 0x20000, 0xFFFF, 0xE000, 0x7F, 0x0},
	}
	n := r.Intn(150)
	var b strings.Builder
	for i := 0; i < n; i++ {
		a := alphabets[r.Intn(len(alphabets))]
		b.WriteRune(a[r.Intn(len(a))])
	}
	return b.String()
}

// TestDifferentialShardhash compares against opensearch-go's independent
// implementation (p = 1 only).
func TestDifferentialShardhash(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	layouts := []Layout{{1, 1024, 1}, {3, 768, 1}, {5, 640, 1}, {6, 6, 1}, {16, 1024, 1}, {30, 960, 1}}
	for i := 0; i < 20000; i++ {
		id := randomID(r)
		if got, want := Hash(id), shardhash.Hash(id); got != want {
			t.Fatalf("Hash(%q) = %d, shardhash = %d", id, got, want)
		}
		l := layouts[i%len(layouts)]
		got, err := l.Shard(id, "")
		if err != nil {
			t.Fatal(err)
		}
		if want := shardhash.ForRouting(id, l.RoutingShards, l.Shards); got != want {
			t.Fatalf("Shard(%q, %+v) = %d, shardhash = %d", id, l, got, want)
		}
	}
}

// refHash is a slow reference written independently of Hash: UTF-16 via
// unicode/utf16, then murmur3 x86_32 step by step in uint64 arithmetic.
func refHash(s string) int32 {
	units := utf16.Encode([]rune(s))
	data := make([]byte, 0, 2*len(units))
	for _, u := range units {
		data = append(data, byte(u&0xff), byte(u>>8))
	}
	const c1, c2 = 0xcc9e2d51, 0x1b873593
	mask := uint64(math.MaxUint32)
	rotl := func(x uint64, r uint) uint64 { return ((x << r) | (x >> (32 - r))) & mask }
	var h uint64
	nblocks := len(data) / 4
	for i := 0; i < nblocks; i++ {
		k := uint64(data[4*i]) | uint64(data[4*i+1])<<8 | uint64(data[4*i+2])<<16 | uint64(data[4*i+3])<<24
		k = (k * c1) & mask
		k = rotl(k, 15)
		k = (k * c2) & mask
		h ^= k
		h = rotl(h, 13)
		h = (h*5 + 0xe6546b64) & mask
	}
	tail := data[nblocks*4:]
	var k uint64
	switch len(tail) {
	case 3:
		k ^= uint64(tail[2]) << 16
		fallthrough
	case 2:
		k ^= uint64(tail[1]) << 8
		fallthrough
	case 1:
		k ^= uint64(tail[0])
		k = (k * c1) & mask
		k = rotl(k, 15)
		k = (k * c2) & mask
		h ^= k
	}
	h ^= uint64(len(data))
	h ^= h >> 16
	h = (h * 0x85ebca6b) & mask
	h ^= h >> 13
	h = (h * 0xc2b2ae35) & mask
	h ^= h >> 16
	return wrap32(int64(h))
}

// wrap32 turns an int64 into the int32 Java would hold.
func wrap32(v int64) int32 {
	v &= 0xffffffff
	if v >= 1<<31 {
		v -= 1 << 32
	}
	return int32(v)
}

// refShard computes the shard in int64 arithmetic with explicit wrap.
func refShard(id, routing string, n, r, p int) int64 {
	eff := id
	if routing != "" {
		eff = routing
	}
	sum := int64(refHash(eff))
	if p != 1 {
		off := int64(refHash(id)) % int64(p)
		if off < 0 {
			off += int64(p)
		}
		sum = int64(wrap32(sum + off))
	}
	m := sum % int64(r)
	if m < 0 {
		m += int64(r)
	}
	return m / int64(r/n)
}

func TestReferenceAgreesWithVectors(t *testing.T) {
	for _, v := range loadVectors(t) {
		if got := refShard(v.ID, v.Routing, v.N, v.R, v.P); got != int64(v.Shard) {
			t.Errorf("reference shard for %+v = %d", v, got)
		}
	}
}

func FuzzShard(f *testing.F) {
	f.Add("hello", "", uint16(5), uint16(0), uint8(1))
	f.Add("20UbhCiAQwIwulH4SP01", "edge-max-0터㓸", uint16(8), uint16(1024), uint8(2))
	f.Add("a\xff", "𝄞", uint16(4), uint16(8), uint8(3))
	f.Fuzz(func(t *testing.T, id, routing string, n16, mult16 uint16, p8 uint8) {
		n := int(n16%1024) + 1
		r := n * (int(mult16%64) + 1)
		p := int(p8)%r + 1
		if p >= r {
			p = 1
		}
		if p > 1 && routing == "" {
			routing = "x"
		}
		if got, want := Hash(id), refHash(SanitizeUTF8(id)); got != want {
			t.Fatalf("Hash(%q) = %d, reference %d", id, got, want)
		}
		got, err := ShardFor(id, routing, n, r, p)
		if err != nil {
			t.Fatalf("ShardFor(%q, %q, %d, %d, %d): %v", id, routing, n, r, p, err)
		}
		if got < 0 || got >= n {
			t.Fatalf("shard %d out of [0, %d)", got, n)
		}
		if want := refShard(SanitizeUTF8(id), SanitizeUTF8(routing), n, r, p); int64(got) != want {
			t.Fatalf("ShardFor(%q, %q, %d, %d, %d) = %d, reference %d", id, routing, n, r, p, got, want)
		}
	})
}

func TestHashNoAlloc(t *testing.T) {
	id := strings.Repeat("é", 128) // 128 UTF-16 units, 256 UTF-8 bytes
	if a := testing.AllocsPerRun(100, func() { Hash(id) }); a != 0 {
		t.Errorf("Hash of 128 units allocates %v times", a)
	}
	l := Layout{5, 640, 1}
	id20 := "aje8FaF5ZpzJLnKvqVFk"
	if a := testing.AllocsPerRun(100, func() { _, _ = l.Shard(id20, "") }); a != 0 {
		t.Errorf("Shard allocates %v times", a)
	}
	long := strings.Repeat("x", 1000)
	if Hash(long) != refHash(long) {
		t.Error("long id hash differs from the reference")
	}
}

var sink int

func BenchmarkShard(b *testing.B) {
	const id = "aje8FaF5ZpzJLnKvqVFk" // 20 characters
	b.Run("opensearchrouted", func(b *testing.B) {
		l := Layout{5, 640, 1}
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			s, _ := l.Shard(id, "")
			sink += s
		}
	})
	b.Run("shardhash.ForRouting", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			sink += shardhash.ForRouting(id, 640, 5)
		}
	})
}

// TestHashASCIIMatchesGeneral checks the all-ASCII fast path against the
// general UTF-16LE path on every length up to 70 and random contents.
func TestHashASCIIMatchesGeneral(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for n := 0; n <= 70; n++ {
		for k := 0; k < 50; k++ {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(rng.Intn(0x80))
			}
			s := string(b)
			got, ok := hashASCII(s)
			want := int32(murmur3.Sum32(appendUTF16LE(nil, s)))
			if !ok || got != want {
				t.Fatalf("hashASCII(%q) = %d, %v; want %d", s, got, ok, want)
			}
		}
	}
	if _, ok := hashASCII("ab\xc3\xa9"); ok {
		t.Fatal("hashASCII accepted a non-ASCII string")
	}
}
