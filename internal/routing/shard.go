package routing

import (
	"fmt"
	"math/bits"
	"unicode/utf8"

	"github.com/twmb/murmur3"
)

// Hash returns OpenSearch's Murmur3HashFunction.hash(s): murmur3 x86_32 with
// seed 0 over the UTF-16LE code units of s, read as a signed int32.
//
// s is taken as UTF-8. Each byte that is not part of a valid UTF-8 sequence
// is hashed as U+FFFD, exactly as encoding/json (and our document encoder,
// see SanitizeUTF8) replaces it before the string reaches the server. So the
// hash is always the hash of the string the server decodes from our JSON.
// Strings of up to 256 UTF-16 code units are hashed without allocating.
func Hash(s string) int32 {
	if h, ok := hashASCII(s); ok {
		return h
	}
	// A UTF-8 string never has more UTF-16 units than bytes, so len(s)
	// bounds the buffer. Two sizes keep the common short id from paying to
	// zero a large stack buffer.
	switch {
	case len(s) <= 64:
		return hashSmall(s)
	case len(s) <= 256:
		return hashMedium(s)
	}
	return int32(murmur3.Sum32(appendUTF16LE(make([]byte, 0, 2*len(s)), s)))
}

// hashASCII is murmur3 x86_32 (seed 0) of the UTF-16LE form of s computed
// straight from s, for the common all-ASCII id: each 4-byte block is two
// characters, each followed by a zero byte. ok is false (and the hash
// meaningless) when s has a byte ≥ 0x80; Hash then takes the general path.
func hashASCII(s string) (int32, bool) {
	const c1, c2 = 0xcc9e2d51, 0x1b873593
	var h, or uint32
	i := 0
	for ; i+1 < len(s); i += 2 {
		a, b := uint32(s[i]), uint32(s[i+1])
		or |= a | b
		k := a | b<<16
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
		h = bits.RotateLeft32(h, 13)
		h = h*5 + 0xe6546b64
	}
	if i < len(s) {
		k := uint32(s[i])
		or |= k
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
	}
	if or >= 0x80 {
		return 0, false
	}
	h ^= uint32(2 * len(s))
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return int32(h), true
}

func hashSmall(s string) int32 {
	var stack [128]byte
	return int32(murmur3.Sum32(appendUTF16LE(stack[:0], s)))
}

func hashMedium(s string) int32 {
	var stack [512]byte
	return int32(murmur3.Sum32(appendUTF16LE(stack[:0], s)))
}

// appendUTF16LE appends the UTF-16LE encoding of s (invalid UTF-8 bytes as
// U+FFFD) to dst.
func appendUTF16LE(dst []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			dst = append(dst, c, 0)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r <= 0xFFFF {
			dst = append(dst, byte(r), byte(r>>8))
			continue
		}
		r -= 0x10000
		hi, lo := 0xD800+(r>>10)&0x3FF, 0xDC00+r&0x3FF
		dst = append(dst, byte(hi), byte(hi>>8), byte(lo), byte(lo>>8))
	}
	return dst
}

// SanitizeUTF8 returns s with every byte that is not part of a valid UTF-8
// sequence replaced by U+FFFD, the string the server sees when the document
// encoder writes s. It returns s itself (no allocation) when s is valid.
// Hash(s) == Hash(SanitizeUTF8(s)) for every s.
func SanitizeUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	out := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, s[i:i+size]...)
		}
		i += size
	}
	return string(out)
}

// Layout is the part of an index's metadata that decides where a document
// lands: N = number_of_shards, R = routing_num_shards, P =
// routing_partition_size.
type Layout struct {
	Shards        int // N, ≥ 1
	RoutingShards int // R, a multiple of N
	PartitionSize int // p, 1 (no partitioning) or 1 < p < R
}

// DefaultRoutingShards is the routing_num_shards OpenSearch gives an index
// created with n shards and no explicit index.number_of_routing_shards:
// n << max(1, 10 - ceil(log2 n)). It is only right for a freshly created
// index: a split or shrunk index keeps its source's R, so read R from the
// cluster state for existing indices.
func DefaultRoutingShards(n int) int {
	if n <= 0 {
		return 0
	}
	ceilLog2 := bits.Len(uint(n - 1)) // 0 for n == 1
	shift := 10 - ceilLog2
	if shift < 1 {
		shift = 1
	}
	return n << shift
}

// NewLayout returns a Layout, with R defaulted when routingShards is 0 and p
// defaulted to 1 when partitionSize is 0. It rejects impossible layouts.
func NewLayout(shards, routingShards, partitionSize int) (Layout, error) {
	if routingShards == 0 {
		routingShards = DefaultRoutingShards(shards)
	}
	if partitionSize == 0 {
		partitionSize = 1
	}
	l := Layout{Shards: shards, RoutingShards: routingShards, PartitionSize: partitionSize}
	return l, l.Validate()
}

// Validate reports why a layout cannot exist on a server.
func (l Layout) Validate() error {
	switch {
	case l.Shards < 1:
		return fmt.Errorf("routing: number_of_shards must be ≥ 1, got %d", l.Shards)
	case l.RoutingShards < l.Shards || l.RoutingShards%l.Shards != 0:
		return fmt.Errorf("routing: routing_num_shards %d must be a multiple of number_of_shards %d", l.RoutingShards, l.Shards)
	case l.PartitionSize < 1:
		return fmt.Errorf("routing: routing_partition_size must be ≥ 1, got %d", l.PartitionSize)
	case l.PartitionSize != 1 && l.PartitionSize >= l.RoutingShards:
		return fmt.Errorf("routing: routing_partition_size %d must be 1 or less than routing_num_shards %d", l.PartitionSize, l.RoutingShards)
	}
	return nil
}

// ErrRoutingRequired is returned by Shard for a partitioned index (p > 1)
// and a document without a routing value, which the server rejects.
type ErrRoutingRequired struct{ PartitionSize int }

func (e ErrRoutingRequired) Error() string {
	return fmt.Sprintf("routing: routing_partition_size %d requires a routing value on every document", e.PartitionSize)
}

// Shard returns the shard a document with this id and routing ("" = none)
// lands in, exactly as OpenSearch's OperationRouting computes it. The layout
// must be valid (see Validate); Shard does not check it again.
func (l Layout) Shard(id, routing string) (int, error) {
	effective := id
	if routing != "" {
		effective = routing
	}
	sum := Hash(effective)
	if l.PartitionSize != 1 {
		if routing == "" {
			return 0, ErrRoutingRequired{l.PartitionSize}
		}
		// The offset is added to the raw int32 hash, wrapping like Java int.
		sum += int32(floorMod(Hash(id), l.PartitionSize))
	}
	return floorMod(sum, l.RoutingShards) / (l.RoutingShards / l.Shards), nil
}

// ShardFor validates the layout (N, R, p) and returns the shard for id and
// routing. R = 0 means the default for N; p = 0 means 1.
func ShardFor(id, routing string, shards, routingShards, partitionSize int) (int, error) {
	l, err := NewLayout(shards, routingShards, partitionSize)
	if err != nil {
		return 0, err
	}
	return l.Shard(id, routing)
}

// floorMod is Java's Math.floorMod for a positive modulus.
func floorMod(a int32, m int) int {
	r := int(a) % m
	if r < 0 {
		r += m
	}
	return r
}
