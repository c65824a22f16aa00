//go:build !diagdump

package tbexec

const armed = true
