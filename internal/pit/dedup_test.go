package pit

import (
	"math"
	"strconv"
	"testing"
)

// A shared window keeps every entry at or above its floor, growing up to
// its limit; past the limit a needed entry is evicted and counted.
func TestDedupWindowGrowsToKeepTheFloor(t *testing.T) {
	d := NewDedupWindow(2, 8)
	d.Keep(10)
	for i := range 8 { // time keys 10..17: all needed
		if d.w.observe("ix", strconv.Itoa(i), 1, int64(10+i)) != dedupNew {
			t.Fatalf("entry %d not new", i)
		}
	}
	if d.Cap() != 8 || d.Len() != 8 || d.Overflows() != 0 {
		t.Fatalf("cap %d len %d overflows %d, want 8 8 0", d.Cap(), d.Len(), d.Overflows())
	}
	for i := range 8 {
		if d.w.observe("ix", strconv.Itoa(i), 1, int64(10+i)) != dedupDuplicate {
			t.Fatalf("entry %d forgotten", i)
		}
	}
	// At the limit: the oldest needed entry goes, counted.
	d.w.observe("ix", "8", 1, 18)
	if d.Overflows() != 1 || d.Cap() != 8 {
		t.Fatalf("overflows %d cap %d, want 1 8", d.Overflows(), d.Cap())
	}
	if d.w.observe("ix", "0", 1, 10) != dedupNew {
		t.Fatal("the evicted entry is still remembered")
	}
	// Below the floor: plain eviction, not counted.
	d.Keep(100)
	before := d.Overflows()
	for i := range 20 {
		d.w.observe("ix", "y"+strconv.Itoa(i), 1, 50)
	}
	if d.Overflows() != before || d.Cap() != 8 {
		t.Fatalf("overflows %d cap %d after entries below the floor", d.Overflows(), d.Cap())
	}
}

// The growth keeps insertion order: the oldest is evicted first after it.
func TestDedupWindowGrowthKeepsOrder(t *testing.T) {
	d := NewDedupWindow(3, 6)
	for i := range 5 { // fills 3, wraps: ring holds 2,3,4 (0 and 1 evicted)
		d.w.observe("ix", strconv.Itoa(i), 1, 1)
	}
	d.Keep(2) // entries with key ≥ 2 needed
	for i := 5; i < 8; i++ {
		d.w.observe("ix", strconv.Itoa(i), 1, 2) // ring[next]=2 (key 1, not needed): evicted
	}
	if d.Cap() != 3 || d.Overflows() != 0 {
		t.Fatalf("cap %d overflows %d, want 3 0", d.Cap(), d.Overflows())
	}
	d.w.observe("ix", "8", 1, 2) // oldest is 5 (key 2): needed, grows
	if d.Cap() != 6 {
		t.Fatalf("cap %d, want 6", d.Cap())
	}
	for _, id := range []string{"5", "6", "7", "8"} {
		if d.w.observe("ix", id, 1, 2) != dedupDuplicate {
			t.Fatalf("%s forgotten by the growth", id)
		}
	}
}

func TestTimeKey(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "1733011200000": 1733011200000, "-5": -5,
		"9223372036854775807": math.MaxInt64, "-9223372036854775808": math.MinInt64,
	} {
		if got, ok := timeKey([]byte(in)); !ok || got != want {
			t.Errorf("timeKey(%s) = %d, %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "-", `"2024"`, "1.5", "null", "9223372036854775808", "99999999999999999999"} {
		if _, ok := timeKey([]byte(in)); ok {
			t.Errorf("timeKey(%s) accepted", in)
		}
	}
}
