// Package bench is hubd's laboratory, kept out of the product: the tools
// that measure the code and the hub, and the scripts that produce every
// figure docs/PERFORMANCE.md publishes, each with the one command that
// reproduces it. It is a module of its own, so that what it needs (the
// Go analysis packages, the floors it compares the hub with) never enters
// the server's or a client's build.
package bench
