//go:build !(linux && (amd64 || arm64 || riscv64))

package arena

// mapRegion reports that protected memory is not supported on this platform.
// The module still builds; a vault here has no arena and cannot prove its
// profile.
func mapRegion(size int, forceFallback bool) (*region, error) {
	return nil, newError("new", -1, size, ErrUnavailable, nil)
}

func (r *region) unmap() error { return nil }
