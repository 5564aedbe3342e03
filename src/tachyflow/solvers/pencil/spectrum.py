"""Energy spectra of the Cartesian solver's velocity in a periodic box, and the random
isotropic velocity of a given spectrum that starts decaying-turbulence cases.

:class:`BoxSpectrum` transforms y-pencil fields with a distributed 3-D FFT (along y on the
y-pencils, along z on the z-pencils, along x on the x-pencils: each rank transforms only its
piece, four transposes per field) and sums ``E(k)`` over the shells of its own piece of
wavenumbers (:mod:`tachyflow.numerics.spectra`) before one reduction. The initial field
is drawn on the x-pencils mode by mode from random numbers that depend only on the mode
(a Philox stream per x-line of wavenumbers), so it is the same on any number of ranks.
"""

from __future__ import annotations

import numpy as np
import scipy.fft

from tachyflow.io.files import data_table
from tachyflow.numerics import spectra
from tachyflow.parallel import Transposer


class BoxSpectrum:
    """3-D FFTs and shell spectra over a periodic box's pencil decomposition.

    Parameters
    ----------
    decomposition : PencilDecomposition
        The fields' decomposition (periodic in x, y and z).
    lengths : (float, float, float)
        The box's sides.

    Notes
    -----
    Construction, :meth:`forward`, :meth:`inverse` and :meth:`energy` are collective.
    """

    def __init__(self, decomposition, lengths):
        self.decomposition = decomposition
        self.lengths = tuple(float(length) for length in lengths)
        self.transposer = Transposer(decomposition, np.complex128)
        shape = decomposition.global_shape
        pencil = decomposition.pencils["x"]
        self.numbers = [np.fft.fftfreq(n, 1.0 / n)[start:stop]
                        for n, start, stop in zip(shape, pencil.start, pencil.stop, strict=True)]
        self.vectors, self.magnitudes = spectra.wavenumber_magnitudes(self.numbers,
                                                                      self.lengths)
        #: The shells' spacing (the box's smallest wavenumber) and their wavenumbers,
        #: 0 .. the Nyquist wavenumber of the coarsest axis.
        self.spacing = 2 * np.pi / max(self.lengths)
        nyquist = min(np.pi * n / length for n, length in zip(shape, self.lengths, strict=True))
        self.wavenumbers = self.spacing * np.arange(round(nyquist / self.spacing) + 1)

    def forward(self, field: np.ndarray) -> np.ndarray:
        """The coefficients ``û`` of a real y-pencil ``field`` (``u = Σ û e^{ik·x}``), as
        this rank's x-pencil."""
        along_y = scipy.fft.fft(field, axis=1, norm="forward")
        along_z = scipy.fft.fft(self.transposer.transpose(along_y, "y", "z"), axis=2,
                                norm="forward")
        return scipy.fft.fft(self.transposer.transpose(along_z, "z", "x"), axis=0,
                             norm="forward", overwrite_x=True)

    def inverse(self, coefficients: np.ndarray) -> np.ndarray:
        """The real part of ``Σ û e^{ik·x}`` at the grid's points, as this rank's y-pencil
        (``coefficients``: its x-pencil)."""
        along_x = scipy.fft.ifft(coefficients, axis=0, norm="forward")
        along_z = scipy.fft.ifft(self.transposer.transpose(along_x, "x", "z"), axis=2,
                                 norm="forward", overwrite_x=True)
        along_y = scipy.fft.ifft(self.transposer.transpose(along_z, "z", "y"), axis=1,
                                 norm="forward", overwrite_x=True)
        return np.ascontiguousarray(along_y.real)

    def energy(self, fields) -> np.ndarray:
        """``E(k)`` at :attr:`wavenumbers` of the y-pencil components ``fields`` (three cell
        arrays): ``Σ_k E(k) Δk`` is their mean kinetic energy up to the coarsest Nyquist
        wavenumber."""
        coefficients = [self.forward(field) for field in fields]
        local = spectra.shell_sums(coefficients, self.magnitudes, len(self.wavenumbers),
                                   self.spacing)
        return self.decomposition.sum_arrays(local)

    def random_velocity(self, wavenumbers: np.ndarray, energies: np.ndarray, seed: int,
                        spacings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A random solenoidal velocity of the spectrum ``E(wavenumbers) = energies``
        (log-interpolated), each component at its staggered points (half a cell up along
        its own axis from the centres ``spacings`` apart), as y-pencils."""
        spectrum = spectra.log_interpolated(wavenumbers, energies, self.magnitudes)
        volume = np.prod([2 * np.pi / length for length in self.lengths])
        modes = spectra.solenoidal_modes(self.vectors, self.magnitudes, spectrum, volume,
                                         self._uniforms(seed))
        # Centres are half a cell up from the transform's points; each face half a cell
        # more along its own axis.
        centre = np.exp(0.5j * sum(k * h for k, h in zip(self.vectors, spacings, strict=True)))
        return tuple(
            self.inverse(modes[axis] * centre * np.exp(0.5j * self.vectors[axis] * spacings[axis]))
            for axis in range(3)
        )

    def _uniforms(self, seed: int) -> np.ndarray:
        """Three uniform numbers per mode of this rank's x-pencil, from a Philox stream per
        global (y, z) wavenumber line: independent of the decomposition."""
        nx, _, nz_all = self.decomposition.global_shape
        pencil = self.decomposition.pencils["x"]
        shape = pencil.stop[1] - pencil.start[1], pencil.stop[2] - pencil.start[2]
        uniforms = np.empty((3, nx, *shape))
        for j in range(shape[0]):
            for k in range(shape[1]):
                line = (pencil.start[1] + j) * nz_all + pencil.start[2] + k
                stream = np.random.Generator(np.random.Philox(key=seed, counter=[0, line, 0, 0]))
                uniforms[:, :, j, k] = stream.random((3, nx))
        return uniforms


def reference_spectra(config) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """``[isotropic] spectrum``'s table in the case's units: wavenumbers and ``E`` of each
    station (``E<station>`` columns; NaN where not measured), from a built-in data set
    (``tachyflow/data/isotropic/NAME.csv``) or a CSV file beside the case."""
    section = config.isotropic
    columns = [f"E{station}" for station in section.stations]
    data = data_table(config, "isotropic.spectrum", "isotropic", section.spectrum,
                      ("k", *columns), "cbc-1971")
    length, velocity = section.length_scale, section.velocity_scale
    energies = {station: data[column] / (velocity**2 * length)
                for station, column in zip(section.stations, columns, strict=True)}
    return data["k"] * length, energies
