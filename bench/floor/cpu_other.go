//go:build !unix

package floor

import "time"

// ProcessCPU is zero where getrusage does not exist (Windows): the
// floors' reports then show no CPU time.
func ProcessCPU() time.Duration { return 0 }
