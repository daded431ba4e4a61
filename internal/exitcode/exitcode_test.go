package exitcode

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

func TestReport(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
		out  string
	}{
		{nil, 0, ""},
		{New(0, errors.New("flag: help requested")), 0, ""},
		{errors.New("boom"), 1, "prog: boom\n"},
		{Usage("bad flag %q", "x"), 2, "prog: bad flag \"x\"\n"},
		{fmt.Errorf("wrapped: %w", New(3, errors.New("three"))), 3, "prog: wrapped: three\n"},
		{Unreachable(errors.New("no hub")), 3, "prog: no hub\n"},
	} {
		var b bytes.Buffer
		if code := Report("prog", tc.err, &b); code != tc.code || b.String() != tc.out {
			t.Errorf("Report(%v) = %d, %q; want %d, %q", tc.err, code, b.String(), tc.code, tc.out)
		}
	}
}
