package qwen3

// ParamNames lists the initializers of the graph Build makes for c, all
// trainable, in the order Build creates them.
func ParamNames(c Config) []string {
	names := []string{EmbedWeight}
	for i := range c.Layers {
		for _, p := range layerParams(c) {
			names = append(names, LayerWeight(i, p.module))
		}
	}
	names = append(names, NormWeight)
	if !c.TiedEmbeddings {
		names = append(names, LMHeadWeight)
	}
	return names
}
