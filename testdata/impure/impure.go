// Package impure breaks every purity rule once; arch_test.go checks that the
// purity check catches each.
package impure

import (
	"maps"
	"time"
)

var counter int

// Bad does everything a pure package must not.
func Bad(m map[string]int) []string {
	go func() {}()
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	for k := range maps.Keys(m) {
		keys = append(keys, k)
	}
	counter++
	_ = time.Now()
	return keys
}
