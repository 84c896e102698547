//go:build !race

package ss4o

const randomCases = 3000
