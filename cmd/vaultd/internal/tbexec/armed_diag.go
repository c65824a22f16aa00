//go:build diagdump

package tbexec

const armed = false
