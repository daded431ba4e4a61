package main

// buildinfoPkg is the package whose variables a release build stamps
// with -ldflags -X (internal/buildinfo).
const buildinfoPkg = "github.com/hubd/hubd/internal/buildinfo"
