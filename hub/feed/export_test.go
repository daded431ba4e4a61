package feed

// Scanned returns o with the view read from the log, not the view cache.
func Scanned(o ViewOptions) ViewOptions {
	o.scan = true
	return o
}
