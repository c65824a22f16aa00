package cli

import "context"

// Main is the process entry point of cut: args includes the program name.
func Main(ctx context.Context, args []string) int {
	env := OSEnv()
	if len(args) > 0 {
		env.Args0 = args[0]
	}
	return Run(ctx, args[1:], env)
}
