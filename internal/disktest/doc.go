// Package disktest answers, for tests, what bytes a directory's files
// hold: erasure tests use it to prove that no byte of what was erased is
// left on disk (a store's files, an archive, a NATS server's blocks).
package disktest
