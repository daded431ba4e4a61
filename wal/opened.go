package wal

import "slices"

// Opened is what Open did to a store before it served: the files it moved
// aside, the journalled commits it wrote again, the sessions it marked
// damaged. `hubd log verify` reports it as what a start would do.
type Opened struct {
	// MovedAside are the files moved into orphans/: tables the MANIFEST
	// does not list and empty memtable logs.
	MovedAside []string
	// Replayed counts the journalled commits badger had lost whole
	// (the unsynced tail of its memtable log), written again.
	Replayed int
	// Marked are the sessions this Open marked damaged (MarkDamaged),
	// besides those marked before.
	Marked []SessionDamage
	// Deletions counts the session deletions (DeleteSession) a crash
	// had interrupted, finished by this Open.
	Deletions int
}

// Opened returns what Open did to the store.
func (l *Log) Opened() Opened {
	l.mu.Lock()
	defer l.mu.Unlock()
	o := l.opened
	o.MovedAside, o.Marked = slices.Clone(o.MovedAside), slices.Clone(o.Marked)
	return o
}
