//go:build !unix

package load

import "time"

// selfCPU is zero where getrusage does not exist (Windows): the reports
// then show no CPU time for hubload, as they show none for a hub whose
// /proc cannot be read.
func selfCPU() time.Duration { return 0 }
