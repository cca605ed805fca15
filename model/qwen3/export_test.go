package qwen3

// ParamNames lists the initializers of the graph Build makes for c, all
// trainable, in the order Build creates them.
func ParamNames(c Config) []string {
	var names []string
	for _, p := range Params(c) {
		names = append(names, p.Name)
	}
	return names
}
