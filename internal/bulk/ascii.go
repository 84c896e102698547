package bulk

// plainPrefix returns the length of the longest prefix of s made of bytes
// that a JSON string holds as they are and that need no decoding: 0x20 to
// 0x7f except '"' and '\\'. It tests eight bytes at a time.
func plainPrefix[T string | []byte](s T) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		q := w ^ (ones * '"')
		bs := w ^ (ones * '\\')
		// A byte's high bit is set in bad if that byte is < 0x20, '"', '\\'
		// or >= 0x80 (the usual "has zero byte / has byte less than n"
		// tests; a false positive only sends us to the byte loop).
		bad := ((w - ones*0x20) | (q - ones) | (bs - ones) | w) & highs
		if bad != 0 {
			break
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return i
		}
	}
	return i
}
