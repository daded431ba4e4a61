//go:build !unix

package wal

import (
	"errors"
	"fmt"
	"os"
)

// errNoData is never returned here: SEEK_DATA is not used.
var errNoData = errors.New("no data")

// lockShared only checks that dir exists: there is no flock here.
func lockShared(dir string) (func(), error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	return func() {}, nil
}
