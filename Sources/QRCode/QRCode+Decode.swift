import CStb
import CZBar

extension QRCode {
    /// The texts of the QR codes in an image file (PNG, JPEG, PGM, BMP or
    /// GIF: a screenshot or a photo of a code), read with libzbar. Throws
    /// when the file is not an image; an image with no code gives `[]`.
    public static func decode(imageAt path: String) throws(QRCodeError) -> [String] {
        var width: Int32 = 0
        var height: Int32 = 0
        var channels: Int32 = 0
        guard let pixels = stbi_load(path, &width, &height, &channels, 1) else {
            let why = stbi_failure_reason().map { String(cString: $0) } ?? "unknown format"
            throw QRCodeError.decodingFailed("cannot read the image \(path): \(why)")
        }
        defer { stbi_image_free(pixels) }
        guard width > 0, height > 0, Int(width) * Int(height) <= 100_000_000 else {
            throw QRCodeError.decodingFailed("the image \(path) is too large to scan")
        }
        guard let scanner = zbar_image_scanner_create() else { throw QRCodeError.decodingFailed("libzbar could not start") }
        defer { zbar_image_scanner_destroy(scanner) }
        zbar_image_scanner_set_config(scanner, ZBAR_NONE, ZBAR_CFG_ENABLE, 0)
        zbar_image_scanner_set_config(scanner, ZBAR_QRCODE, ZBAR_CFG_ENABLE, 1)
        guard let image = zbar_image_create() else { throw QRCodeError.decodingFailed("libzbar could not start") }
        defer { zbar_image_destroy(image) }
        // 'Y800': 8-bit grey, one byte per pixel.
        zbar_image_set_format(image, UInt(0x3030_3859))
        zbar_image_set_size(image, UInt32(width), UInt32(height))
        zbar_image_set_data(image, pixels, UInt(width) * UInt(height), nil)
        guard zbar_scan_image(scanner, image) >= 0 else { throw QRCodeError.decodingFailed("libzbar failed to scan \(path)") }
        var texts: [String] = []
        var symbol = zbar_image_first_symbol(image)
        while let current = symbol {
            if zbar_symbol_get_type(current) == ZBAR_QRCODE, let data = zbar_symbol_get_data(current) {
                texts.append(String(cString: data))
            }
            symbol = zbar_symbol_next(current)
        }
        return texts
    }
}
