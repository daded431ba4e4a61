package load

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// subBits is how many bits below the leading one a histogram keeps: a
// value is known to within 1/2^subBits (0.8%) of itself.
const subBits = 7

// histBuckets covers every non-negative int64: values below 2^(subBits+1)
// exactly, then 2^subBits buckets per power of two.
const histBuckets = (64 - subBits) << subBits

// histogram is a log-bucketed histogram of durations, in the manner of
// HdrHistogram, safe for concurrent use without locks.
type histogram struct {
	counts [histBuckets]atomic.Uint64
	n      atomic.Uint64
	sum    atomic.Int64
	max    atomic.Int64
}

// bucketOf returns the bucket of v >= 0.
func bucketOf(v int64) int {
	if v < 2<<subBits {
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - subBits - 1
	return shift<<subBits + int(v>>shift)
}

// bucketMid returns the middle of bucket i's range of values.
func bucketMid(i int) int64 {
	if i < 2<<subBits {
		return int64(i)
	}
	shift := i>>subBits - 1
	m := int64(i - shift<<subBits)
	return m<<shift + (int64(1)<<shift)/2
}

// record adds one duration (negative ones count as zero).
func (h *histogram) record(d time.Duration) {
	v := max(int64(d), 0)
	h.counts[bucketOf(v)].Add(1)
	h.n.Add(1)
	h.sum.Add(v)
	for {
		m := h.max.Load()
		if v <= m || h.max.CompareAndSwap(m, v) {
			return
		}
	}
}

// add adds what o recorded to h (o no longer changing).
func (h *histogram) add(o *histogram) {
	for i := range o.counts {
		if c := o.counts[i].Load(); c > 0 {
			h.counts[i].Add(c)
		}
	}
	h.n.Add(o.n.Load())
	h.sum.Add(o.sum.Load())
	h.max.Store(max(h.max.Load(), o.max.Load()))
}

// count returns how many durations were recorded.
func (h *histogram) count() uint64 { return h.n.Load() }

// quantile returns the duration below which a fraction q of the recorded
// ones fall (0 when none was recorded), never more than the maximum.
func (h *histogram) quantile(q float64) time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	rank = min(max(rank, 1), n)
	if rank == n {
		return time.Duration(h.max.Load())
	}
	var seen uint64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			return time.Duration(min(bucketMid(i), h.max.Load()))
		}
	}
	return time.Duration(h.max.Load())
}

// mean returns the average recorded duration.
func (h *histogram) mean() time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	return time.Duration(h.sum.Load() / int64(n))
}
