package wire

// ExportTexts is exportTexts, for the oracle of FuzzRender.
var ExportTexts = exportTexts
