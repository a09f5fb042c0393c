extension QRCode {
    /// The symbol as a binary PGM (P5) image: `scale` pixels per module, `quietZone` modules of white around.
    public func pgm(scale: Int = 8, quietZone: Int = 4) -> [UInt8] {
        let (side, pixels) = grayPixels(scale: scale, quietZone: quietZone)
        return Array("P5\n\(side) \(side)\n255\n".utf8) + pixels
    }

    /// The symbol as an 8-bit grayscale PNG: `scale` pixels per module, `quietZone` modules of white around.
    public func png(scale: Int = 8, quietZone: Int = 4) -> [UInt8] {
        let (side, pixels) = grayPixels(scale: scale, quietZone: quietZone)
        return PNG.grayscale(width: side, height: side, pixels: pixels)
    }

    /// The symbol as an SVG document, black on white, `scale` units per module: a vector image
    /// that stays sharp at any size (units are pixels to renderers that ignore the viewBox).
    public func svg(scale: Int = 8, quietZone: Int = 4) -> String {
        let side = (size + 2 * quietZone) * scale
        var path = ""
        for y in 0..<size {
            var x = 0
            while x < size {
                guard isDark(x: x, y: y) else { x += 1; continue }
                let start = x
                while x < size && isDark(x: x, y: y) { x += 1 }
                let width = (x - start) * scale
                path += "M\((start + quietZone) * scale) \((y + quietZone) * scale)h\(width)v\(scale)h-\(width)z"
            }
        }
        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \(side) \(side)" width="\(side)" height="\(side)" shape-rendering="crispEdges">
            <rect width="\(side)" height="\(side)" fill="#ffffff"/>
            <path fill="#000000" d="\(path)"/>
            </svg>

            """
    }

    private func grayPixels(scale: Int, quietZone: Int) -> (side: Int, pixels: [UInt8]) {
        let side = (size + 2 * quietZone) * scale
        var pixels = [UInt8](repeating: 255, count: side * side)
        for y in 0..<size {
            for x in 0..<size where isDark(x: x, y: y) {
                for dy in 0..<scale {
                    let row = ((y + quietZone) * scale + dy) * side
                    let column = (x + quietZone) * scale
                    for dx in 0..<scale { pixels[row + column + dx] = 0 }
                }
            }
        }
        return (side, pixels)
    }
}
