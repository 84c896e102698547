//go:build !race

package opensearchbackfill

const roundTripScale = 1
