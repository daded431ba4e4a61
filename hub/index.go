package hub

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/hubd/hubd/session"
)

// The hub keeps in memory only what is live: open and pending sessions
// (their machines, timers, idempotency answers), plus a bounded cache of
// ended sessions a read loaded from the log. Everything else it finds
// through an index it keeps in the log itself (Log.IndexScan), written in
// the same atomic append as the records it describes, so that it is
// exactly as durable as they are:
//
//	'V'                          → "1": the index is complete (a log written before it is indexed at start)
//	'L' | session                → "": the session is live (written with its open, deleted with its end)
//	'P' | len | agent | session  → "": agent takes part in the session
//	'C' | parent | child         → "": child is a child session of parent
//	'K' | len | creator | key    → session: the session opened with idempotency key
//	'T' | len | creator | key    → session: the latest session of the creator's thread
//	'F' | source | fork          → "": fork is a fork of source (written since purges exist)
//
// (len is the name's length, 2 bytes big-endian, so that a prefix of one
// name never matches another.) Start-up folds only the live sessions;
// listings, trees and subscriptions find ended ones through the index and
// load each on demand: start-up time and memory grow with the live
// sessions, not with the length of the log.
const (
	ixVersion byte = 'V'
	ixLive    byte = 'L'
	ixMember  byte = 'P'
	ixChild   byte = 'C'
	ixOpenKey byte = 'K'
	ixThread  byte = 'T'
	ixFork    byte = 'F'
)

// indexVersion is the value of the 'V' key.
const indexVersion = "1"

func versionKey() []byte { return []byte{ixVersion} }

func liveKey(id session.ID) []byte { return append([]byte{ixLive}, id[:]...) }

// nameKey is kind | len(name) | name, the prefix of an agent's keys.
func nameKey(kind byte, name string) []byte {
	b := binary.BigEndian.AppendUint16([]byte{kind}, uint16(len(name)))
	return append(b, name...)
}

func memberKey(agent string, id session.ID) []byte { return append(nameKey(ixMember, agent), id[:]...) }

func childKey(parent, child session.ID) []byte {
	return append(append([]byte{ixChild}, parent[:]...), child[:]...)
}

func forkKey(source, fork session.ID) []byte { return append(forkPrefix(source), fork[:]...) }

func forkPrefix(source session.ID) []byte { return append([]byte{ixFork}, source[:]...) }

// keyKey is the index key of a creator's open or thread key: the key
// itself, or past maxPlainKey bytes its SHA-256 (after a 0xff byte, which
// no UTF-8 text holds), so that any key fits the log's index.
func keyKey(kind byte, creator, key string) []byte {
	b := nameKey(kind, creator)
	if len(key) <= maxPlainKey {
		return append(b, key...)
	}
	sum := sha256.Sum256([]byte(key))
	return append(append(b, 0xff), sum[:]...)
}

// maxPlainKey is the longest open or thread key indexed as it is.
const maxPlainKey = 256

// createIndex is the index of a new session: its members, its place under
// its parent, its keys, and (unless it ended in its first write) its live
// mark.
func createIndex(s *Session) []IndexEntry {
	var out []IndexEntry
	if !s.m.Lifecycle.State.Ended() {
		out = append(out, IndexEntry{Key: liveKey(s.id)})
	}
	for _, p := range s.meta.GetParticipants() {
		out = append(out, IndexEntry{Key: memberKey(p.GetName(), s.id)})
	}
	if pid, err := session.ParseID(s.meta.GetParentSessionId()); err == nil {
		out = append(out, IndexEntry{Key: childKey(pid, s.id)})
	}
	if src, err := session.ParseID(s.meta.GetForkedFrom().GetSessionId()); err == nil {
		out = append(out, IndexEntry{Key: forkKey(src, s.id)})
	}
	if k := s.meta.GetOpenKey(); k != "" {
		out = append(out, IndexEntry{Key: keyKey(ixOpenKey, s.meta.GetCreator(), k), Value: s.id[:]})
	}
	if k := s.meta.GetThreadKey(); k != "" {
		out = append(out, IndexEntry{Key: keyKey(ixThread, s.meta.GetCreator(), k), Value: s.id[:]})
	}
	return out
}

// indexedID reads a session id stored as an index value or key suffix.
func indexedID(b []byte) (session.ID, bool) {
	if len(b) < 16 {
		return session.ID{}, false
	}
	return session.ID(b[len(b)-16:]), true
}
