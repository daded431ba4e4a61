package cluster

import (
	"testing"
	"time"
)

// TestUnexpired: a lease handed back stays unexpired until its validity
// runs out (no other node can take it before it is deleted); one lost is
// over at once; any lease is over once its validity has passed.
func TestUnexpired(t *testing.T) {
	tests := []struct {
		name  string
		valid time.Duration // from now, at acquisition
		drop  string        // "", "handed back", "lost"
		want  bool
	}{
		{"held", time.Minute, "", true},
		{"held, expired by the clock", -time.Second, "", false},
		{"handed back", time.Minute, "handed back", true},
		{"handed back, expired by the clock", -time.Second, "handed back", false},
		{"lost", time.Minute, "lost", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPartition(0)
			go p.run(LeaseConfig{}.withDefaults())
			defer p.close()
			p.acquired(7, time.Now().Add(tt.valid))
			if tt.drop != "" {
				_, done, ok := p.drop(0, tt.drop == "lost")
				if !ok {
					t.Fatal("the lease was not held")
				}
				<-done
			}
			if got := p.unexpired(); got != tt.want {
				t.Errorf("unexpired() = %v, want %v", got, tt.want)
			}
		})
	}
}
