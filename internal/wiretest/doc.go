// Package wiretest holds checks of hubd's wire API that run both against
// an in-process server (bufconn) and against the real hubd binary.
package wiretest
