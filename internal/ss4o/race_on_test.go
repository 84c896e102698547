//go:build race

package ss4o

// randomCases is smaller under the race detector, which slows pdata down
// about twentyfold.
const randomCases = 400
