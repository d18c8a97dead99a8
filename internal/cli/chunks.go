package cli

import "github.com/spf13/cobra"

// DefaultChunkSize is kubectl's page size for lists.
const DefaultChunkSize int64 = 500

// AddChunkSizeFlag registers kubectl's --chunk-size on cmd, into size.
func AddChunkSizeFlag(cmd *cobra.Command, size *int64) {
	cmd.Flags().Int64Var(size, "chunk-size", *size, "Return large lists in chunks of this many objects rather than all at once; 0 disables chunking.")
}

// ValidateChunkSize refuses a negative --chunk-size as a usage error.
func ValidateChunkSize(size int64) error {
	if size < 0 {
		return UsageErrorf("--chunk-size must be 0 or more, got %d", size)
	}
	return nil
}
