package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/pb"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/badger/v4/y"
	"google.golang.org/protobuf/proto"
)

// A badger table ends with its footer, which badger reads first when it
// opens the table:
//
//	blocks | index | index length (4, BE) | checksum of the index | checksum length (4, BE)
//
// Badger trusts both lengths: a table cut short (a copy or a restore that
// stopped, a file system that lost its tail) or damaged there makes it
// read out of bounds and panic in a goroutine of its own, which ends the
// process with a trace. checkTableFiles reads every footer first, so that
// such a table is refused with its name.

// errFooter is the cause of a table whose footer cannot be read.
var errFooter = errors.New("its footer does not hold an index")

// checkTableFiles checks the footer of every table the MANIFEST m lists in
// dir (all present: see checkFiles) and describes each bad one.
func checkTableFiles(dir string, m badger.Manifest) []string {
	var out []string
	for _, id := range slices.Sorted(mapKeys(m.Tables)) {
		name := table.IDToFilename(id)
		if err := checkTableFooter(filepath.Join(dir, name)); err != nil {
			out = append(out, fmt.Sprintf("table %s is damaged: %v", name, err))
		}
	}
	return out
}

// tableOpenRE finds the table file in badger's error for one it could not
// open.
var tableOpenRE = regexp.MustCompile(`Opening table: "([^"]+)"`)

// tableOpenDamage is the *DamageError of badger's failure to open a table
// (its last block, which badger reads at open, fails its checksum), nil
// for another error.
func tableOpenDamage(dir string, err error) *DamageError {
	m := tableOpenRE.FindStringSubmatch(err.Error())
	if m == nil {
		return nil
	}
	return storeDamage(dir, fmt.Sprintf("table %s is damaged: badger cannot open it: %v", filepath.Base(m[1]), err))
}

// checkTableFooter reads a table file's footer and index and checks the
// index against its checksum.
func checkTableFooter(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	read := func(end, n int64) ([]byte, error) {
		if n < 0 || end-n < 0 {
			return nil, fmt.Errorf("%w (%d bytes: cut short, or damaged at its end)", errFooter, size)
		}
		b := make([]byte, n)
		if _, err := f.ReadAt(b, end-n); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		return b, nil
	}
	b, err := read(size, 4)
	if err != nil {
		return err
	}
	end := size - 4
	sum, err := read(end, int64(binary.BigEndian.Uint32(b)))
	if err != nil {
		return err
	}
	end -= int64(len(sum))
	var chk pb.Checksum
	if err := proto.Unmarshal(sum, &chk); err != nil || (chk.Algo != pb.Checksum_CRC32C && chk.Algo != pb.Checksum_XXHash64) {
		return fmt.Errorf("%w (%d bytes: its index checksum does not decode)", errFooter, size)
	}
	if b, err = read(end, 4); err != nil {
		return err
	}
	end -= 4
	index, err := read(end, int64(binary.BigEndian.Uint32(b)))
	if err != nil {
		return err
	}
	if err := y.VerifyChecksum(index, &chk); err != nil {
		return fmt.Errorf("%w (%d bytes: its index fails its checksum)", errFooter, size)
	}
	return nil
}
